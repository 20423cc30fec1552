//! Bounded host-side signal queues (crossbeam), with bounded waits that say which side
//! stalled.

use std::time::Duration;

use crossbeam::queue::ArrayQueue;

use crate::backoff::{Backoff, Deadline};
use crate::error::{Error, Result, Side};

/// A bounded multi-producer multi-consumer queue between host threads (the scheduler, latency
/// threads, a transport's pump). A full queue is back-pressure: `send` waits, bounded.
#[derive(Debug)]
pub struct SignalQueue<T> {
    queue: ArrayQueue<T>,
    name: String,
    producer: Side,
    consumer: Side,
}

impl<T> SignalQueue<T> {
    /// A queue of `capacity` (≥ 1) messages; `producer` and `consumer` say which side each end
    /// serves, for the errors of bounded waits.
    pub fn new(
        name: impl Into<String>,
        capacity: usize,
        producer: Side,
        consumer: Side,
    ) -> Result<Self> {
        if capacity == 0 {
            return Err(Error::out_of_range(
                "signal queue capacity",
                capacity,
                "at least 1",
            ));
        }
        Ok(SignalQueue {
            queue: ArrayQueue::new(capacity),
            name: name.into(),
            producer,
            consumer,
        })
    }

    /// Sends without waiting; gives the message back when full.
    pub fn try_send(&self, msg: T) -> std::result::Result<(), T> {
        self.queue.push(msg)
    }

    /// Receives without waiting.
    pub fn try_recv(&self) -> Option<T> {
        self.queue.pop()
    }

    /// Sends, waiting at most `timeout` for room.
    pub fn send(&self, msg: T, timeout: Duration) -> Result<()> {
        let deadline = Deadline::after(timeout);
        let mut backoff = Backoff::new();
        let mut msg = msg;
        loop {
            match self.queue.push(msg) {
                Ok(()) => return Ok(()),
                Err(back) => msg = back,
            }
            if deadline.expired() {
                return Err(Error::Stalled {
                    side: self.consumer,
                    waiting_for: format!("drain {} (full at {})", self.name, self.queue.capacity()),
                    waited_ms: deadline.waited_ms(),
                    detail: String::new(),
                });
            }
            backoff.snooze();
        }
    }

    /// Receives, waiting at most `timeout` for a message.
    pub fn recv(&self, timeout: Duration) -> Result<T> {
        let deadline = Deadline::after(timeout);
        let mut backoff = Backoff::new();
        loop {
            if let Some(m) = self.queue.pop() {
                return Ok(m);
            }
            if deadline.expired() {
                return Err(Error::Stalled {
                    side: self.producer,
                    waiting_for: format!("send on {}", self.name),
                    waited_ms: deadline.waited_ms(),
                    detail: String::new(),
                });
            }
            backoff.snooze();
        }
    }

    /// Messages queued now.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no message is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Capacity.
    pub fn capacity(&self) -> usize {
        self.queue.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_queue_times_out_naming_the_consumer() {
        let q = SignalQueue::new("jobs", 1, Side::Host, Side::Device).unwrap();
        q.send(1, Duration::from_millis(10)).unwrap();
        match q.send(2, Duration::from_millis(20)) {
            Err(Error::Stalled {
                side: Side::Device, ..
            }) => {}
            other => panic!("expected a stall on the device side, got {other:?}"),
        }
        assert_eq!(q.recv(Duration::from_millis(10)).unwrap(), 1);
        assert!(matches!(
            q.recv(Duration::from_millis(5)),
            Err(Error::Stalled {
                side: Side::Host,
                ..
            })
        ));
        assert!(SignalQueue::<u8>::new("x", 0, Side::Host, Side::Host).is_err());
    }
}
