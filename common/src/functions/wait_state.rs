//! The wait states overhead indicates, with Scalasca's names so that users
//! recognise them (`docs/method.md`, "Wait states").

use serde::{Deserialize, Serialize};

use super::EventClass;

/// A wait state. The JSON spelling is Scalasca's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum WaitState {
    /// A receive (or probe) waited for its message's sender.
    #[serde(rename = "Late Sender")]
    LateSender,
    /// A rendezvous or synchronous send waited for its receiver.
    #[serde(rename = "Late Receiver")]
    LateReceiver,
    /// An all-to-all collective waited for its last rank.
    #[serde(rename = "Wait at NxN")]
    WaitAtNxN,
    #[serde(rename = "Wait at Barrier")]
    WaitAtBarrier,
    /// A non-root waited for a late root (one-to-all).
    #[serde(rename = "Late Broadcast")]
    LateBroadcast,
    /// The root waited for late others (all-to-one).
    #[serde(rename = "Early Reduce")]
    EarlyReduce,
    /// Rank i waited for a rank below it in a prefix reduction.
    #[serde(rename = "Early Scan")]
    EarlyScan,
}

impl WaitState {
    /// Every state, in the order of the enum.
    pub const ALL: [WaitState; 7] = [
        WaitState::LateSender,
        WaitState::LateReceiver,
        WaitState::WaitAtNxN,
        WaitState::WaitAtBarrier,
        WaitState::LateBroadcast,
        WaitState::EarlyReduce,
        WaitState::EarlyScan,
    ];

    /// Scalasca's name, as reports print it.
    pub const fn as_str(self) -> &'static str {
        match self {
            WaitState::LateSender => "Late Sender",
            WaitState::LateReceiver => "Late Receiver",
            WaitState::WaitAtNxN => "Wait at NxN",
            WaitState::WaitAtBarrier => "Wait at Barrier",
            WaitState::LateBroadcast => "Late Broadcast",
            WaitState::EarlyReduce => "Early Reduce",
            WaitState::EarlyScan => "Early Scan",
        }
    }

    /// The state of a name as reports print it.
    pub fn from_name(name: &str) -> Option<WaitState> {
        WaitState::ALL.into_iter().find(|w| w.as_str() == name)
    }
}

impl std::fmt::Display for WaitState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The wait state that overhead in this class indicates. `rendezvous` says
/// whether a send was large enough (or synchronous) to need the receiver.
pub fn wait_state(class: EventClass, rendezvous: bool) -> Option<WaitState> {
    match class {
        EventClass::Recv | EventClass::Probe => Some(WaitState::LateSender),
        EventClass::Send if rendezvous => Some(WaitState::LateReceiver),
        EventClass::Send => None,
        EventClass::SendRecv => Some(WaitState::LateSender),
        EventClass::CollectiveNxN => Some(WaitState::WaitAtNxN),
        EventClass::Barrier => Some(WaitState::WaitAtBarrier),
        EventClass::CollectiveOneToN => Some(WaitState::LateBroadcast),
        EventClass::CollectiveNToOne => Some(WaitState::EarlyReduce),
        EventClass::CollectiveScan => Some(WaitState::EarlyScan),
        EventClass::Post | EventClass::Completion | EventClass::Poll => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::class_of;

    #[test]
    fn scalasca_names() {
        let ws = |f: &str, r| wait_state(class_of(f).unwrap(), r).map(WaitState::as_str);
        assert_eq!(ws("MPI_Recv", false), Some("Late Sender"));
        assert_eq!(ws("MPI_Ssend", true), Some("Late Receiver"));
        assert_eq!(ws("MPI_Allreduce", false), Some("Wait at NxN"));
        assert_eq!(ws("MPI_Bcast", false), Some("Late Broadcast"));
        assert_eq!(ws("MPI_Reduce", false), Some("Early Reduce"));
    }

    #[test]
    fn json_spelling_is_the_name() {
        for w in WaitState::ALL {
            let json = serde_json::to_string(&w).unwrap();
            assert_eq!(json, format!("\"{}\"", w.as_str()));
            assert_eq!(serde_json::from_str::<WaitState>(&json).unwrap(), w);
            assert_eq!(WaitState::from_name(w.as_str()), Some(w));
        }
    }
}
