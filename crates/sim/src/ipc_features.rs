//! The version-dependent rules of pipes and sockets, as toggles of a kernel
//! profile (fs/pipe.c), derived from the version like the wake-up path's
//! and the idle loop's toggles and overridable by name
//! (`--feature pipe_wake_writer=...`). The channels themselves are
//! [`crate::channel`]; the engine hands each channel the rule it runs.

/// When `pipe_read` wakes a writer blocked on a full pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeWakeWriter {
    /// 5.5 to 6.13: `pipe_read` notes whether the pipe was full when it
    /// began and, if so, wakes one writer after reading, whether or not the
    /// read emptied a buffer: a small read from a full pipe wakes a writer
    /// that finds the pipe still full and sleeps again.
    WasFull,
    /// From 6.14 (aaec5a95d596, "pipe_read: don't wake up the writer if the
    /// pipe is still full"): only a read that used up a buffer of a pipe
    /// that was full wakes a writer.
    Freed,
}

crate::toggles! {
    /// The pipe and socket toggles of one kernel profile.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct IpcFeatures {}
    /// (name, values, description) of every pipe and socket toggle.
    table pub IPC_FEATURES;
    defaults(_name, _v, ge);
    fn for_version = "The toggles of kernel version `v` (`(7, 0)` is the latest tree).";
    fn set = "Set toggle `name` to `value`. Ok(false): not a pipe or socket toggle; \
        Err(valid values): a bad value.";
    impl Default = (7, 0), "The latest tree's.";
    toggles {
        /// When a read wakes a blocked writer.
        pub pipe_wake_writer: PipeWakeWriter = if ge(6, 14) { PipeWakeWriter::Freed } else { PipeWakeWriter::WasFull },
            "pipe_wake_writer" ("was-full|freed": "was-full" => PipeWakeWriter::WasFull, "freed" => PipeWakeWriter::Freed)
            => "pipe_read wakes a blocked writer after any read of a full pipe (5.5-6.13), or only after a read that used up a buffer of it (aaec5a95d596, 6.14)";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_wake_rule_changed_in_6_14() {
        assert_eq!(
            IpcFeatures::for_version((6, 13)).pipe_wake_writer,
            PipeWakeWriter::WasFull
        );
        assert_eq!(
            IpcFeatures::for_version((6, 14)).pipe_wake_writer,
            PipeWakeWriter::Freed
        );
        let mut f = IpcFeatures::default();
        assert_eq!(f.set("pipe_wake_writer", "was-full"), Ok(true));
        assert_eq!(f.pipe_wake_writer, PipeWakeWriter::WasFull);
        assert_eq!(f.set("sis_util", "on"), Ok(false));
        assert!(f.set("pipe_wake_writer", "sometimes").is_err());
    }
}
