//! What rank 0 tells every rank to do next, broadcast as 9 bytes (a tag and
//! a job id) so that every rank takes part in the same step.

/// The next step of the job loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Command {
    /// Measure the job with this index.
    Job(usize),
    /// Re-synchronize the clocks.
    Resync,
    /// Nothing left (or the time budget is spent).
    Done,
}

const JOB: u8 = 0;
const RESYNC: u8 = 1;
const DONE: u8 = 2;

impl Command {
    /// The wire form.
    pub(super) fn to_bytes(self) -> [u8; 9] {
        let mut b = [0u8; 9];
        match self {
            Command::Job(id) => {
                b[0] = JOB;
                b[1..].copy_from_slice(&(id as u64).to_le_bytes());
            }
            Command::Resync => b[0] = RESYNC,
            Command::Done => b[0] = DONE,
        }
        b
    }

    /// The command of a wire form (an unknown tag ends the loop).
    pub(super) fn from_bytes(b: [u8; 9]) -> Command {
        match b[0] {
            JOB => {
                let mut id = [0u8; 8];
                id.copy_from_slice(&b[1..]);
                Command::Job(u64::from_le_bytes(id) as usize)
            }
            RESYNC => Command::Resync,
            _ => Command::Done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Command;

    #[test]
    fn commands_survive_the_wire() {
        for c in [
            Command::Job(0),
            Command::Job(123_456),
            Command::Resync,
            Command::Done,
        ] {
            assert_eq!(Command::from_bytes(c.to_bytes()), c);
        }
    }
}
