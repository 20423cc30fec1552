//! The SVM-resident signal ring (see [`super::ring_protocol`] for the protocol).

use std::cell::Cell;

use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::signal::ring_protocol as proto;
use crate::sys::{SvmBuffer, SvmKind};

/// A bounded ring of 64-bit messages in SVM, shared by host threads and kernels.
///
/// On a fine-grained buffer with atomics ([`SvmKind::FineAtomics`]) host threads push and pop
/// while a kernel does the same ([`DeviceRing::try_push`], [`DeviceRing::try_pop`]). On coarse
/// SVM the host works on it between kernels only ([`DeviceRing::with_mapped`]).
#[derive(Debug)]
pub struct DeviceRing {
    buffer: SvmBuffer<u32>,
    capacity: u32,
}

impl DeviceRing {
    /// A ring of `capacity` messages (a power of two, 2..=2^30) in SVM of the runtime's
    /// transport.
    pub fn new(rt: &Runtime, capacity: u32) -> Result<Self> {
        Self::with_kind(rt, capacity, rt.transport().svm_kind())
    }

    /// A ring in SVM of `kind`.
    pub fn with_kind(rt: &Runtime, capacity: u32, kind: SvmKind) -> Result<Self> {
        if !proto::valid_capacity(capacity) {
            return Err(Error::out_of_range(
                "ring capacity",
                capacity,
                "must be a power of two between 2 and 2^30",
            ));
        }
        let mut buffer = rt.alloc_kind::<u32>(proto::words_for(capacity), kind)?;
        {
            let mut map = buffer.map()?;
            proto::init(Cell::from_mut(&mut map[..]).as_slice_of_cells(), capacity);
            map.unmap()?;
        }
        Ok(DeviceRing { buffer, capacity })
    }

    /// The SVM buffer, to pass to kernels (`Kernel::arg_svm`).
    pub fn buffer(&self) -> &SvmBuffer<u32> {
        &self.buffer
    }

    /// Capacity in messages.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Pushes while kernels may run (fine SVM with atomics only); `Ok(Err(msg))` when full.
    pub fn try_push(&self, msg: u64) -> Result<std::result::Result<(), u64>> {
        Ok(proto::try_push(self.buffer.atomics()?, msg))
    }

    /// Pops while kernels may run (fine SVM with atomics only).
    pub fn try_pop(&self) -> Result<Option<u64>> {
        Ok(proto::try_pop(self.buffer.atomics()?))
    }

    /// Messages in the ring (fine SVM with atomics only; a snapshot).
    pub fn len_now(&self) -> Result<u32> {
        Ok(proto::len(self.buffer.atomics()?))
    }

    /// Runs `f` on the ring while it is mapped on the host (between kernels, any SVM kind):
    /// `f` gets a [`MappedRing`] to push and pop.
    pub fn with_mapped<R>(&mut self, f: impl FnOnce(&MappedRing<'_>) -> R) -> Result<R> {
        let mut map = self.buffer.map()?;
        let r = f(&MappedRing {
            words: Cell::from_mut(&mut map[..]).as_slice_of_cells(),
        });
        map.unmap()?;
        Ok(r)
    }
}

/// A ring mapped on the host: no kernel can touch it until the map ends.
pub struct MappedRing<'a> {
    words: &'a [Cell<u32>],
}

impl MappedRing<'_> {
    /// Pushes; gives the message back when full.
    pub fn try_push(&self, msg: u64) -> std::result::Result<(), u64> {
        proto::try_push(self.words, msg)
    }
    /// Pops the oldest message.
    pub fn try_pop(&self) -> Option<u64> {
        proto::try_pop(self.words)
    }
    /// Messages in the ring.
    pub fn len(&self) -> u32 {
        proto::len(self.words)
    }
    /// Whether the ring is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Free slots.
    pub fn room(&self) -> u32 {
        proto::capacity(self.words) - self.len()
    }
}
