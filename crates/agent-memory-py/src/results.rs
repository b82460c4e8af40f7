//! What calls return to Python. Results keep the Rust values and convert a field only when
//! Python reads it, so a recall costs little more than the Rust call: a result of twenty
//! hits is one object until its hits are looked at.

use std::sync::Arc;

use agent_memory::retrieve::DECAY_METADATA_KEY;
use agent_memory::{
    CONTEXT_METADATA_KEY, EndReason, MemoryItem, ORIGINAL_METADATA_KEY, Outcome,
    PINNED_METADATA_KEY, RetrievalResult, RetrievalSource,
};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PySlice};

use crate::convert::{from_json, from_time};

/// The metadata keys the library reserves for itself; a record shows them as attributes
/// (`context`, `pinned`, `original`) rather than in `metadata`.
const RESERVED_KEYS: [&str; 4] = [
    CONTEXT_METADATA_KEY,
    ORIGINAL_METADATA_KEY,
    PINNED_METADATA_KEY,
    DECAY_METADATA_KEY,
];

/// Whether `key` is one of the metadata keys the library reserves for itself.
pub(crate) fn is_reserved(key: &str) -> bool {
    RESERVED_KEYS.contains(&key)
}

/// A memory's metadata without the reserved keys.
fn user_metadata<'py>(py: Python<'py>, item: &MemoryItem) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    if let Some(object) = item.metadata.as_object() {
        for (key, value) in object {
            if !RESERVED_KEYS.contains(&key.as_str()) {
                dict.set_item(key, from_json(py, value)?)?;
            }
        }
    }
    Ok(dict)
}

/// Python's `repr` of a string (`'text'`), for the classes' own reprs.
pub(crate) fn repr(py: Python<'_>, text: &str) -> String {
    pyo3::types::PyString::new(py, text)
        .repr()
        .map(|repr| repr.to_string())
        .unwrap_or_else(|_| format!("{text:?}"))
}

/// An `f32` as the Python float that prints the same (`0.7`, not `0.699999988079071`).
pub(crate) fn float(value: f32) -> f64 {
    // Display gives the shortest text that reads back as the same f32.
    value.to_string().parse().unwrap_or(f64::from(value))
}

fn optional_time<'py>(
    py: Python<'py>,
    at: Option<chrono::DateTime<chrono::Utc>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    at.map(|at| from_time(py, at)).transpose()
}

/// A hash of `parts`, for `__hash__`: each class hashes fields that equal objects share,
/// so objects that compare equal hash alike (and results stay usable in sets and as keys).
fn hash_of(parts: impl std::hash::Hash) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(parts)
}

/// The JSON state a result is pickled as (its `__reduce__`).
fn state_of(value: &impl serde::Serialize) -> PyResult<Vec<u8>> {
    serde_json::to_vec(value)
        .map_err(|error| PyValueError::new_err(format!("could not pickle the result: {error}")))
}

/// A result read back from the state [`state_of`] wrote.
fn from_state<T: serde::de::DeserializeOwned>(state: &[u8]) -> PyResult<T> {
    serde_json::from_slice(state)
        .map_err(|error| PyValueError::new_err(format!("not a pickled result: {error}")))
}

/// `(cls._from_state, (state,))`: what `__reduce__` returns, so `pickle` (and
/// `multiprocessing`, `copy`) rebuilds the object from its JSON state through a class
/// method of its own class, which pickle finds by the class's module and name.
fn reduce<'py>(
    object: &Bound<'py, PyAny>,
    state: Vec<u8>,
) -> PyResult<(Bound<'py, PyAny>, (Vec<u8>,))> {
    Ok((object.get_type().getattr("_from_state")?, (state,)))
}

/// A stored memory.
#[pyclass(frozen, module = "agent_memory", name = "MemoryRecord")]
pub(crate) struct Record {
    pub(crate) item: Arc<MemoryItem>,
}

impl Record {
    pub(crate) fn new(item: impl Into<Arc<MemoryItem>>) -> Self {
        Self { item: item.into() }
    }
}

#[pymethods]
impl Record {
    /// Its id, unique within its namespace.
    #[getter]
    fn id(&self) -> &str {
        &self.item.id
    }

    /// Its namespace (`user-1/agent`).
    #[getter]
    fn namespace(&self) -> &str {
        self.item.namespace.as_str()
    }

    /// The text (for a compressed memory, the compressed text).
    #[getter]
    fn text(&self) -> &str {
        &self.item.content
    }

    /// `short_term`, `long_term`, `episodic` or `semantic`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.item.kind.as_str()
    }

    /// Importance in [0, 1].
    #[getter]
    fn importance(&self) -> f64 {
        float(self.item.importance)
    }

    /// Tags, normalised (lowercase, dashes).
    #[getter]
    fn tags(&self) -> Vec<String> {
        self.item.tags.iter().map(ToString::to_string).collect()
    }

    /// Metadata, a dict (the library's reserved `_` keys are shown as attributes instead).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        user_metadata(py, &self.item)
    }

    /// Where it came from, if given.
    #[getter]
    fn source(&self) -> Option<&str> {
        self.item.source.as_deref()
    }

    /// Text that situates it (searchable, not part of it), if any.
    #[getter]
    fn context(&self) -> Option<&str> {
        Some(self.item.context()).filter(|context| !context.is_empty())
    }

    /// Whether maintenance leaves it alone (never evicted, decayed or compressed).
    #[getter]
    fn pinned(&self) -> bool {
        self.item.is_pinned()
    }

    /// The text before compression (the text itself when it was never compressed).
    #[getter]
    fn original(&self) -> &str {
        self.item.original()
    }

    /// How far its source is trusted, in [0, 1].
    #[getter]
    fn credibility(&self) -> f64 {
        float(self.item.credibility)
    }

    /// When it was remembered (an aware datetime in UTC).
    #[getter]
    fn created_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        from_time(py, self.item.created_at)
    }

    /// When it last changed.
    #[getter]
    fn updated_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        from_time(py, self.item.updated_at)
    }

    /// When it was last recalled, if ever.
    #[getter]
    fn last_accessed<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        optional_time(py, self.item.last_accessed)
    }

    /// How many times it was recalled.
    #[getter]
    fn access_count(&self) -> u64 {
        self.item.access_count
    }

    /// The fact it states (`user.city`), if any.
    #[getter]
    fn fact_key(&self) -> Option<&str> {
        self.item.fact_key.as_deref()
    }

    /// From when the fact holds in the world, if given.
    #[getter]
    fn valid_from<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        optional_time(py, self.item.valid_from)
    }

    /// Until when the fact holds in the world, if given.
    #[getter]
    fn valid_until<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        optional_time(py, self.item.valid_until)
    }

    /// How it stopped being believed, or None while it is current: a dict with `at`,
    /// `reason` (`superseded`, `consolidated` or `retracted`) and `by`, `into` or `why`.
    #[getter]
    fn ended<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(ended) = &self.item.ended else {
            return Ok(None);
        };
        let dict = PyDict::new(py);
        dict.set_item("at", from_time(py, ended.at)?)?;
        match &ended.reason {
            EndReason::Superseded { by } => {
                dict.set_item("reason", "superseded")?;
                dict.set_item("by", by)?;
            }
            EndReason::Consolidated { into } => {
                dict.set_item("reason", "consolidated")?;
                dict.set_item("into", into)?;
            }
            EndReason::Retracted { reason } => {
                dict.set_item("reason", "retracted")?;
                dict.set_item("why", reason)?;
            }
        }
        Ok(Some(dict))
    }

    /// The ids of the memories it superseded, oldest first.
    #[getter]
    fn supersedes(&self) -> Vec<String> {
        self.item.supersedes.clone()
    }

    /// The ids of memories found to contradict it.
    #[getter]
    fn conflicts_with(&self) -> Vec<String> {
        self.item.conflicts_with.clone()
    }

    /// Every attribute as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("id", self.id())?;
        dict.set_item("namespace", self.namespace())?;
        dict.set_item("text", self.text())?;
        dict.set_item("kind", self.kind())?;
        dict.set_item("importance", self.importance())?;
        dict.set_item("tags", self.tags())?;
        dict.set_item("metadata", self.metadata(py)?)?;
        dict.set_item("source", self.source())?;
        dict.set_item("context", self.context())?;
        dict.set_item("pinned", self.pinned())?;
        dict.set_item("credibility", self.credibility())?;
        dict.set_item("created_at", self.created_at(py)?)?;
        dict.set_item("updated_at", self.updated_at(py)?)?;
        dict.set_item("last_accessed", self.last_accessed(py)?)?;
        dict.set_item("access_count", self.access_count())?;
        dict.set_item("fact_key", self.fact_key())?;
        dict.set_item("valid_from", self.valid_from(py)?)?;
        dict.set_item("valid_until", self.valid_until(py)?)?;
        dict.set_item("ended", self.ended(py)?)?;
        dict.set_item("supersedes", self.supersedes())?;
        dict.set_item("conflicts_with", self.conflicts_with())?;
        Ok(dict)
    }

    /// Equal when every field is (the same memory read twice, unchanged between).
    fn __eq__(&self, other: &Self) -> bool {
        self.item == other.item
    }

    fn __hash__(&self) -> u64 {
        hash_of((
            self.item.namespace.as_str(),
            &self.item.id,
            self.item.updated_at,
        ))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Vec<u8>,))> {
        reduce(slf.as_any(), state_of(&*slf.get().item)?)
    }

    /// Rebuilds a pickled record (see `__reduce__`).
    #[classmethod]
    fn _from_state(_cls: &Bound<'_, pyo3::types::PyType>, state: &[u8]) -> PyResult<Self> {
        Ok(Self::new(from_state::<MemoryItem>(state)?))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "MemoryRecord(id={}, namespace={}, text={}, kind={})",
            repr(py, &self.item.id),
            repr(py, self.item.namespace.as_str()),
            repr(py, &self.item.content),
            repr(py, self.item.kind.as_str())
        )
    }
}

/// One recall result: a memory, a knowledge page or a graph entity, with its score and why.
#[pyclass(frozen, module = "agent_memory", name = "Hit")]
pub(crate) struct Hit {
    result: Arc<RetrievalResult>,
    index: usize,
}

impl Hit {
    fn scored(&self) -> &agent_memory::ScoredItem {
        &self.result.items[self.index]
    }
}

#[pymethods]
impl Hit {
    /// What it is: `memory`, `page` or `entity`.
    #[getter]
    fn source(&self) -> &'static str {
        match &self.scored().record {
            RetrievalSource::Memory(_) => "memory",
            RetrievalSource::KnowledgePage(_) => "page",
            RetrievalSource::GraphEntity(_) => "entity",
        }
    }

    /// Its id.
    #[getter]
    fn id(&self) -> &str {
        self.scored().record.id()
    }

    /// Its namespace.
    #[getter]
    fn namespace(&self) -> &str {
        self.scored().record.namespace().as_str()
    }

    /// Its text: a memory's text; a page's title and summary; an entity's name, type and
    /// description.
    #[getter]
    fn text(&self) -> String {
        self.scored().record.text()
    }

    /// The score, in [0, 1]; higher is better.
    #[getter]
    fn score(&self) -> f64 {
        float(self.scored().score)
    }

    /// The memory found, as a MemoryRecord; None for a page or an entity.
    #[getter]
    fn record(&self) -> Option<Record> {
        match &self.scored().record {
            RetrievalSource::Memory(item) => Some(Record::new(Arc::clone(item))),
            _ => None,
        }
    }

    /// A memory's metadata (reserved keys left out); an empty dict for pages and entities.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        match &self.scored().record {
            RetrievalSource::Memory(item) => user_metadata(py, item),
            _ => Ok(PyDict::new(py)),
        }
    }

    /// Why it scored what it did: `{"channels": [...], "signals": {name: {"value": v,
    /// "contribution": c}}}`. Channels are those that found it (`memory`, `knowledge`,
    /// `graph_match`, `graph_traversal`, `embedding`, `context`); each signal's value is in
    /// [0, 1] and its contribution is what it added to the score (negative for `stale`).
    #[getter]
    fn breakdown<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let breakdown = &self.scored().breakdown;
        let channels = PyList::empty(py);
        for channel in &breakdown.channels {
            let name = serde_json::to_value(channel)
                .ok()
                .and_then(|value| value.as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("{channel:?}"));
            channels.append(name)?;
        }
        let signals = PyDict::new(py);
        for signal in &breakdown.signals {
            let entry = PyDict::new(py);
            entry.set_item("value", float(signal.value))?;
            entry.set_item("contribution", float(signal.contribution))?;
            signals.set_item(signal.name.as_str(), entry)?;
        }
        let dict = PyDict::new(py);
        dict.set_item("channels", channels)?;
        dict.set_item("signals", signals)?;
        Ok(dict)
    }

    /// The hit as a dict: source, id, namespace, text, score, metadata, breakdown.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("source", self.source())?;
        dict.set_item("id", self.id())?;
        dict.set_item("namespace", self.namespace())?;
        dict.set_item("text", self.text())?;
        dict.set_item("score", self.score())?;
        dict.set_item("metadata", self.metadata(py)?)?;
        dict.set_item("breakdown", self.breakdown(py)?)?;
        Ok(dict)
    }

    /// Equal when the record, its score and its breakdown are.
    fn __eq__(&self, other: &Self) -> bool {
        self.scored() == other.scored()
    }

    fn __hash__(&self) -> u64 {
        hash_of(self.scored().record.id())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Vec<u8>,))> {
        reduce(slf.as_any(), state_of(slf.get().scored())?)
    }

    /// Rebuilds a pickled hit (see `__reduce__`).
    #[classmethod]
    fn _from_state(_cls: &Bound<'_, pyo3::types::PyType>, state: &[u8]) -> PyResult<Self> {
        let scored: agent_memory::ScoredItem = from_state(state)?;
        Ok(Self {
            result: Arc::new(RetrievalResult {
                items: vec![scored],
                ..RetrievalResult::default()
            }),
            index: 0,
        })
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Hit(source={}, id={}, score={:.4}, text={})",
            repr(py, self.source()),
            repr(py, self.id()),
            self.score(),
            repr(py, &self.text())
        )
    }
}

/// What a recall found: a sequence of hits, best first.
#[pyclass(frozen, sequence, module = "agent_memory", name = "RecallResult")]
pub(crate) struct Recalled {
    result: Arc<RetrievalResult>,
}

impl Recalled {
    pub(crate) fn new(result: RetrievalResult) -> Self {
        Self {
            result: Arc::new(result),
        }
    }

    fn hit(&self, index: usize) -> Hit {
        Hit {
            result: Arc::clone(&self.result),
            index,
        }
    }
}

#[pymethods]
impl Recalled {
    /// The query as given.
    #[getter]
    fn query(&self) -> &str {
        &self.result.query
    }

    /// How many candidates were scored before the threshold and the cut.
    #[getter]
    fn total_found(&self) -> usize {
        self.result.total_found
    }

    /// The hits, best first, as a list.
    #[getter]
    fn hits(&self) -> Vec<Hit> {
        (0..self.result.items.len())
            .map(|index| self.hit(index))
            .collect()
    }

    /// The hits' texts, best first.
    fn texts(&self) -> Vec<String> {
        self.result
            .items
            .iter()
            .map(|scored| scored.record.text())
            .collect()
    }

    fn __len__(&self) -> usize {
        self.result.items.len()
    }

    /// A hit by position (negative from the end), or a list of hits by slice, as for any
    /// sequence.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        index: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(slice) = index.cast::<PySlice>() {
            let len = self.result.items.len();
            let indices = slice.indices(isize::try_from(len).unwrap_or(isize::MAX))?;
            let mut hits = Vec::with_capacity(indices.slicelength);
            let mut at = indices.start;
            for _ in 0..indices.slicelength {
                if let Ok(position) = usize::try_from(at) {
                    hits.push(self.hit(position));
                }
                at += indices.step;
            }
            return Ok(PyList::new(py, hits)?.into_any());
        }
        let index: isize = index.extract()?;
        let len = isize::try_from(self.result.items.len()).unwrap_or(isize::MAX);
        let position = if index < 0 { index + len } else { index };
        match usize::try_from(position) {
            Ok(position) if position < self.result.items.len() => {
                Ok(Bound::new(py, self.hit(position))?.into_any())
            }
            _ => Err(PyIndexError::new_err("recall result index out of range")),
        }
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        let list = PyList::new(slf.py(), slf.hits())?;
        list.try_iter().map(Bound::into_any)
    }

    fn __bool__(&self) -> bool {
        !self.result.items.is_empty()
    }

    /// Equal when the query, the hits (records, scores, breakdowns) and the counts are.
    fn __eq__(&self, other: &Self) -> bool {
        self.result == other.result
    }

    fn __hash__(&self) -> u64 {
        hash_of((&self.result.query, self.result.items.len()))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Vec<u8>,))> {
        reduce(slf.as_any(), state_of(&*slf.get().result)?)
    }

    /// Rebuilds a pickled recall result (see `__reduce__`).
    #[classmethod]
    fn _from_state(_cls: &Bound<'_, pyo3::types::PyType>, state: &[u8]) -> PyResult<Self> {
        Ok(Self::new(from_state(state)?))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "RecallResult(query={}, hits={}, total_found={})",
            repr(py, &self.result.query),
            self.result.items.len(),
            self.result.total_found
        )
    }
}

/// What `remember` did.
#[pyclass(frozen, module = "agent_memory", name = "Remembered")]
pub(crate) struct Remembered {
    inner: agent_memory::Remembered,
}

impl Remembered {
    pub(crate) fn new(inner: agent_memory::Remembered) -> Self {
        Self { inner }
    }
}

#[pymethods]
impl Remembered {
    /// The id the text lives under: the new memory's, or the one it was merged into.
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }

    /// `added`, `merged` (a duplicate: nothing new stored), `superseded` (stored, and it
    /// replaced older memories of its fact) or `outdated` (stored as history: a later
    /// version of the fact was there already).
    #[getter]
    fn outcome(&self) -> &'static str {
        match &self.inner.outcome {
            Outcome::Added => "added",
            Outcome::Merged { .. } => "merged",
            Outcome::Superseded { .. } => "superseded",
            Outcome::Outdated { .. } => "outdated",
        }
    }

    /// The ids of the memories it superseded (outcome `superseded`), else empty.
    #[getter]
    fn superseded(&self) -> Vec<String> {
        match &self.inner.outcome {
            Outcome::Superseded { old } => old.clone(),
            _ => Vec::new(),
        }
    }

    /// The later version that supersedes it at once (outcome `outdated`), else None.
    #[getter]
    fn outdated_by(&self) -> Option<&str> {
        match &self.inner.outcome {
            Outcome::Outdated { by } => Some(by),
            _ => None,
        }
    }

    /// The stored memories found to contradict it: dicts with `id` and `reason`.
    #[getter]
    fn conflicts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for conflict in &self.inner.conflicts {
            let dict = PyDict::new(py);
            dict.set_item("id", &conflict.id)?;
            dict.set_item("reason", &conflict.reason)?;
            list.append(dict)?;
        }
        Ok(list)
    }

    /// Equal when the id, the outcome and the conflicts are.
    fn __eq__(&self, other: &Self) -> bool {
        self.inner == other.inner
    }

    fn __hash__(&self) -> u64 {
        hash_of(&self.inner.id)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Vec<u8>,))> {
        reduce(slf.as_any(), state_of(&slf.get().inner)?)
    }

    /// Rebuilds a pickled outcome (see `__reduce__`).
    #[classmethod]
    fn _from_state(_cls: &Bound<'_, pyo3::types::PyType>, state: &[u8]) -> PyResult<Self> {
        Ok(Self::new(from_state(state)?))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Remembered(id={}, outcome={}, conflicts={})",
            repr(py, &self.inner.id),
            repr(py, self.outcome()),
            self.inner.conflicts.len()
        )
    }
}
