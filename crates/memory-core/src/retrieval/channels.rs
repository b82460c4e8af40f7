//! [`Channels`]: the channels that found a result, kept inline.
//!
//! A recall returns tens of results. Their channels were a vector each: one heap allocation
//! per result, for a list of one or two of the six channels. A set of at most six fits in
//! seven bytes, so a breakdown's channels are a plain value, never allocated. The list reads
//! as a slice (`Deref`) and serialises as the list it replaces.

use std::fmt;

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Channel;

/// How many [`Channel`]s there are: [`Channel::Context`] is the last.
const ALL: usize = Channel::Context as usize + 1;

/// The channels that found a result, in the order they found it, each at most once.
#[derive(Clone, Copy)]
pub struct Channels {
    len: u8,
    items: [Channel; ALL],
}

impl Channels {
    /// The most the list holds: every channel once.
    pub const CAPACITY: usize = ALL;

    /// An empty list.
    pub const fn new() -> Self {
        Self {
            len: 0,
            // Unused places hold any channel: only the first `len` are read.
            items: [Channel::Memory; ALL],
        }
    }

    /// Adds `channel`, unless it is listed already.
    pub fn push(&mut self, channel: Channel) {
        if self.contains(&channel) {
            return;
        }
        // Every channel fits once, so a place is always free here.
        if let Some(place) = self.items.get_mut(usize::from(self.len)) {
            *place = channel;
            self.len += 1;
        }
    }

    /// The channels, in the order they were added.
    pub fn as_slice(&self) -> &[Channel] {
        &self.items[..usize::from(self.len)]
    }
}

impl Default for Channels {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::Deref for Channels {
    type Target = [Channel];
    fn deref(&self) -> &[Channel] {
        self.as_slice()
    }
}

impl fmt::Debug for Channels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Channels {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Channels {}

impl PartialEq<[Channel]> for Channels {
    fn eq(&self, other: &[Channel]) -> bool {
        self.as_slice() == other
    }
}

impl<const N: usize> PartialEq<[Channel; N]> for Channels {
    fn eq(&self, other: &[Channel; N]) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl FromIterator<Channel> for Channels {
    /// Each channel pushed in turn: a repeat is listed once.
    fn from_iter<I: IntoIterator<Item = Channel>>(channels: I) -> Self {
        let mut list = Self::new();
        list.extend(channels);
        list
    }
}

impl Extend<Channel> for Channels {
    fn extend<I: IntoIterator<Item = Channel>>(&mut self, channels: I) {
        for channel in channels {
            self.push(channel);
        }
    }
}

impl<'a> IntoIterator for &'a Channels {
    type Item = &'a Channel;
    type IntoIter = std::slice::Iter<'a, Channel>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl From<Channels> for Vec<Channel> {
    fn from(channels: Channels) -> Self {
        channels.as_slice().to_vec()
    }
}

impl Serialize for Channels {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Channels {
    /// A list of channels, none listed twice (so at most six); a repeat is an error, not
    /// dropped.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct List;

        impl<'de> Visitor<'de> for List {
            type Value = Channels;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of channels, each at most once")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Channels, A::Error> {
                let mut list = Channels::new();
                while let Some(channel) = seq.next_element::<Channel>()? {
                    if list.contains(&channel) {
                        return Err(A::Error::custom(format_args!(
                            "channel {channel:?} is listed twice"
                        )));
                    }
                    list.push(channel);
                }
                Ok(list)
            }
        }

        deserializer.deserialize_seq(List)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY: [Channel; 6] = [
        Channel::Memory,
        Channel::Knowledge,
        Channel::GraphMatch,
        Channel::GraphTraversal,
        Channel::Embedding,
        Channel::Context,
    ];

    #[test]
    fn channels_are_listed_once_in_the_order_first_pushed() {
        let mut channels = Channels::new();
        channels.push(Channel::Embedding);
        channels.push(Channel::Memory);
        channels.push(Channel::Embedding);
        assert_eq!(channels, [Channel::Embedding, Channel::Memory]);
        assert_eq!(
            Vec::from(channels),
            vec![Channel::Embedding, Channel::Memory]
        );
        assert_eq!(format!("{channels:?}"), "[Embedding, Memory]");
    }

    #[test]
    fn every_channel_fits() {
        let all: Channels = EVERY.into_iter().chain(EVERY).collect();
        assert_eq!(all, EVERY);
        assert_eq!(Channels::CAPACITY, EVERY.len());
    }

    #[test]
    fn channels_serialise_as_a_list_and_a_repeat_is_refused() {
        let channels: Channels = [Channel::Memory, Channel::Context].into_iter().collect();
        let json = serde_json::to_string(&channels).unwrap();
        assert_eq!(json, r#"["memory","context"]"#);
        assert_eq!(serde_json::from_str::<Channels>(&json).unwrap(), channels);
        let all = serde_json::to_string(&EVERY).unwrap();
        assert_eq!(serde_json::from_str::<Channels>(&all).unwrap(), EVERY);

        let twice = serde_json::from_str::<Channels>(r#"["memory","memory"]"#);
        assert!(twice.unwrap_err().to_string().contains("listed twice"));
        let seven = all.replace(']', r#","memory"]"#);
        assert!(serde_json::from_str::<Channels>(&seven).is_err());
        assert!(serde_json::from_str::<Channels>(r#"{"memory": 1}"#).is_err());
        assert!(serde_json::from_str::<Channels>(r#"["nowhere"]"#).is_err());
        assert_eq!(
            serde_json::from_str::<Channels>("[]").unwrap(),
            Channels::new()
        );
    }
}
