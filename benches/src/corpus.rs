//! Deterministic corpora: a xorshift PRNG and Zipf-distributed words.

/// A small, fast, seeded PRNG (xorshift64*). Deterministic across platforms.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is remapped).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A uniform float in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform integer in `[0, n)` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Draws words from a vocabulary with Zipf's law (exponent ~1.07, as in English text).
#[derive(Clone, Debug)]
pub struct Zipf {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ran", "te", "su", "vo", "ne", "pa", "ri", "do", "shi", "ber", "gal", "tor",
    "en", "qu", "ish", "ma", "zo", "li", "ur", "fen", "ost",
];

impl Zipf {
    /// A vocabulary of `size` pronounceable made-up words, seeded.
    pub fn new(size: usize, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut words = Vec::with_capacity(size);
        let mut seen = std::collections::HashSet::new();
        while words.len() < size {
            let syllables = 1 + rng.below(3) + usize::from(words.len() > 200);
            let word: String = (0..syllables)
                .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
                .collect();
            if seen.insert(word.clone()) {
                words.push(word);
            }
        }
        let mut cumulative = Vec::with_capacity(size);
        let mut total = 0.0;
        for rank in 1..=size {
            total += 1.0 / (rank as f64).powf(1.07);
            cumulative.push(total);
        }
        for value in &mut cumulative {
            *value /= total;
        }
        Self { words, cumulative }
    }

    /// One word.
    pub fn word(&self, rng: &mut Rng) -> &str {
        let x = rng.next_f64();
        let at = self
            .cumulative
            .partition_point(|c| *c < x)
            .min(self.words.len() - 1);
        &self.words[at]
    }

    /// A text of about `chars` characters.
    pub fn text(&self, rng: &mut Rng, chars: usize) -> String {
        let mut out = String::with_capacity(chars + 16);
        while out.len() < chars {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(self.word(rng));
        }
        out
    }

    /// The vocabulary, most frequent first.
    pub fn words(&self) -> &[String] {
        &self.words
    }
}

/// `n` memory texts of 150 to 450 characters over a 20 000-word Zipf vocabulary, and `q`
/// queries of 2 to 5 words drawn from the middle of the distribution, all from `seed`.
pub fn corpus(n: usize, q: usize, seed: u64) -> (Vec<String>, Vec<String>) {
    let zipf = Zipf::new(20_000, seed);
    let mut rng = Rng::new(seed ^ 0xA5A5);
    let docs = (0..n)
        .map(|_| {
            let len = 150 + rng.below(300);
            zipf.text(&mut rng, len)
        })
        .collect();
    let queries = (0..q)
        .map(|_| {
            let words = 2 + rng.below(4);
            (0..words)
                .map(|_| zipf.words()[50 + rng.below(5000)].clone())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    (docs, queries)
}
