//! The task farm's two messages, as little-endian `u64` fields followed by chunk bytes.
//!
//! A worker sends [`Report`]s to rank 0 (tag [`TAG_REPORT`]); each report with `want` set is
//! answered by exactly one [`Assign`] (tag [`TAG_ASSIGN`]), in order. A worker keeps
//! [`DEPTH`] requests in flight, so its next batch is on its way while it transforms the
//! current one, and says [`Report::bye`] once it has nothing left.

use std::ops::Range;

/// Worker → rank 0: a result and/or a request.
pub const TAG_REPORT: i32 = 11;
/// Rank 0 → worker: a batch, or the end of the work.
pub const TAG_ASSIGN: i32 = 12;
/// Any rank → rank 0: the layout [`Cluster::layout`](crate::Cluster::layout) gathers.
pub const TAG_LAYOUT: i32 = 13;
/// Watchdog ↔ watchdog: a heartbeat (the sender's step and host; see
/// [`watchdog`](crate::watchdog)).
pub const TAG_ALIVE: i32 = 14;

/// Batches a worker holds at once (being transformed or on their way).
pub const DEPTH: usize = 2;

const NONE: u64 = u64::MAX;

/// What a worker tells rank 0.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Asks for one more batch.
    pub want: bool,
    /// The worker is done: no more reports will come from it.
    pub bye: bool,
    /// The worker's thread count (batches are sized by it).
    pub threads: u64,
    /// The batch this report returns, if any.
    pub batch: Option<Range<u64>>,
    /// The lowest chunk that failed in it.
    pub failed: Option<u64>,
    /// The end of the output, when the batch held the last chunk.
    pub end: Option<u64>,
    /// The batch's output (messages transport, when it succeeded).
    pub payload: Vec<u8>,
}

const REPORT_FIELDS: usize = 7;

impl Report {
    /// The message bytes.
    pub fn encode(&self) -> Vec<u8> {
        let batch = self.batch.clone().unwrap_or(NONE..NONE);
        let fields = [
            self.want as u64,
            self.bye as u64,
            self.threads,
            batch.start,
            batch.end,
            self.failed.unwrap_or(NONE),
            self.end.unwrap_or(NONE),
        ];
        encode(&fields, &self.payload)
    }

    /// Parses message bytes (they come from a rank of the same program).
    pub fn decode(mut message: Vec<u8>) -> Self {
        let fields = decode::<REPORT_FIELDS>(&mut message);
        let some = |x: u64| (x != NONE).then_some(x);
        Report {
            want: fields[0] != 0,
            bye: fields[1] != 0,
            threads: fields[2],
            batch: some(fields[3]).map(|start| start..fields[4]),
            failed: some(fields[5]),
            end: some(fields[6]),
            payload: message,
        }
    }
}

/// What rank 0 answers: a batch of chunks (with their input, messages transport), or `None`
/// when no work is left.
#[derive(Debug, PartialEq, Eq)]
pub struct Assign {
    /// The chunks, or `None`: stop asking.
    pub batch: Option<Range<u64>>,
    /// The batch's input, from the context bytes before its first chunk to the end of its last
    /// (messages transport).
    pub payload: Vec<u8>,
}

impl Assign {
    /// The message bytes.
    pub fn encode(&self) -> Vec<u8> {
        let batch = self.batch.clone().unwrap_or(NONE..NONE);
        encode(&[batch.start, batch.end], &self.payload)
    }

    /// Parses message bytes.
    pub fn decode(mut message: Vec<u8>) -> Self {
        let fields = decode::<2>(&mut message);
        Assign {
            batch: (fields[0] != NONE).then_some(fields[0]..fields[1]),
            payload: message,
        }
    }
}

fn encode(fields: &[u64], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.len() * 8 + payload.len());
    for field in fields {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out.extend_from_slice(payload);
    out
}

/// Takes `N` fields off the front of `message`, leaving the payload.
fn decode<const N: usize>(message: &mut Vec<u8>) -> [u64; N] {
    assert!(
        message.len() >= N * 8,
        "short message from a paracrypt rank"
    );
    let mut fields = [0u64; N];
    for (i, field) in fields.iter_mut().enumerate() {
        *field = u64::from_le_bytes(message[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    }
    message.drain(..N * 8);
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_round_trip() {
        let report = Report {
            want: true,
            bye: false,
            threads: 4,
            batch: Some(8..12),
            failed: Some(9),
            end: None,
            payload: b"abc".to_vec(),
        };
        assert_eq!(Report::decode(report.encode()), report);
        let empty = Report::default();
        assert_eq!(Report::decode(empty.encode()), empty);
    }

    #[test]
    fn assign_round_trip() {
        let assign = Assign {
            batch: Some(0..1),
            payload: vec![1, 2, 3],
        };
        assert_eq!(Assign::decode(assign.encode()), assign);
        let done = Assign {
            batch: None,
            payload: Vec::new(),
        };
        assert_eq!(Assign::decode(done.encode()), done);
    }
}
