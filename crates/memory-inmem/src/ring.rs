//! `RingBuffer<T>`: a fixed-capacity buffer for short-term memory.

use std::collections::VecDeque;

use memory_core::{MemoryError, Result};

/// A buffer of at most `capacity` items; pushing onto a full buffer evicts the oldest.
/// `push` and eviction are `O(1)`.
///
/// ```
/// use memory_inmem::RingBuffer;
/// let mut buffer = RingBuffer::new(2)?;
/// assert_eq!(buffer.push("a"), None);
/// assert_eq!(buffer.push("b"), None);
/// assert_eq!(buffer.push("c"), Some("a"));
/// assert_eq!(buffer.iter_recent().copied().collect::<Vec<_>>(), ["c", "b"]);
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[derive(Clone, Debug)]
pub struct RingBuffer<T> {
    buffer: VecDeque<T>,
    capacity: usize,
}

impl<T> RingBuffer<T> {
    /// An empty buffer holding at most `capacity` items.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `capacity` when it is zero.
    pub fn new(capacity: usize) -> Result<Self> {
        if capacity == 0 {
            return Err(MemoryError::invalid("capacity", "must be at least 1"));
        }
        Ok(Self {
            buffer: VecDeque::with_capacity(capacity.min(4096)),
            capacity,
        })
    }

    /// Appends `item`, returning the evicted oldest item when the buffer was full.
    pub fn push(&mut self, item: T) -> Option<T> {
        let evicted = if self.buffer.len() == self.capacity {
            self.buffer.pop_front()
        } else {
            None
        };
        self.buffer.push_back(item);
        evicted
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.buffer.iter()
    }

    /// Newest first.
    pub fn iter_recent(&self) -> impl Iterator<Item = &T> {
        self.buffer.iter().rev()
    }

    /// The number of items held.
    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// The most items the buffer holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Removes the items for which `keep` is false.
    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.buffer.retain(keep);
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.buffer.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest() {
        assert!(RingBuffer::<u8>::new(0).is_err());
        let mut buffer = RingBuffer::new(3).unwrap();
        let evicted: Vec<Option<i32>> = (0..5).map(|i| buffer.push(i)).collect();
        assert_eq!(evicted, [None, None, None, Some(0), Some(1)]);
        assert_eq!(buffer.iter().copied().collect::<Vec<_>>(), [2, 3, 4]);
        assert_eq!(buffer.len(), 3);
        buffer.retain(|x| *x != 3);
        assert_eq!(buffer.iter_recent().copied().collect::<Vec<_>>(), [4, 2]);
        buffer.clear();
        assert!(buffer.is_empty());
    }
}
