//! Scheduling classes for natter's background OS threads, on Linux
//! (elsewhere nothing).
//!
//! The HTTP workers run at the process's own priority. Work that must
//! yield the cores to them when they want them — encoding a snapshot,
//! answering a heavy read — runs in a lower class, so a busy box serves
//! sends first and the rest with what is left.

/// A thread's scheduling class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// `SCHED_IDLE`: runs only on a core nothing else wants (next to no
    /// CPU while the cores are saturated).
    Idle,
    /// Nice 19 in the normal class: about 1.5% of a busy core against
    /// each competing normal thread, all of an idle one.
    Background,
}

impl Priority {
    /// Puts the calling thread in this class; false if the system refused
    /// (the thread keeps its priority).
    pub fn apply(self) -> bool {
        #[cfg(target_os = "linux")]
        {
            use thread_priority::{
                set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
                ThreadPriority, ThreadSchedulePolicy,
            };
            let policy = match self {
                Priority::Idle => NormalThreadSchedulePolicy::Idle,
                Priority::Background => NormalThreadSchedulePolicy::Other,
            };
            let policy = ThreadSchedulePolicy::Normal(policy);
            set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Min, policy).is_ok()
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = self;
            true
        }
    }
}

/// The calling thread's nice value and scheduling policy (proc(5)).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn nice_and_policy() -> (i64, i64) {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    // The fields after the command's closing parenthesis start at
    // field 3 (proc(5)): nice is field 19, the policy field 41.
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    (fields[19 - 3].parse().unwrap(), fields[41 - 3].parse().unwrap())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn background_is_nice_19_and_idle_is_sched_idle() {
        std::thread::spawn(|| {
            assert!(Priority::Background.apply());
            assert_eq!(nice_and_policy(), (19, 0), "SCHED_OTHER at nice 19");
            assert!(Priority::Idle.apply());
            assert_eq!(nice_and_policy().1, 5, "SCHED_IDLE");
        })
        .join()
        .unwrap();
    }
}
