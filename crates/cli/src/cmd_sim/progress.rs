//! The progress line of a long simulation, on stderr when that is a
//! terminal: events processed, simulated time reached and the wall time.
//! The engine only publishes two counters ([`sim::engine::Progress`]);
//! a thread here polls them, so the event loop never waits for a display.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::engine::Progress;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Wall time before the line appears (a short run shows nothing).
const SHOW_AFTER: Duration = Duration::from_secs(1);
/// How often the line is redrawn.
const REFRESH: Duration = Duration::from_millis(200);

/// Run `f` with the counters it should publish into (None when stderr is
/// not a terminal: no display, nothing published), showing them on
/// stderr while it runs; the line is cleared when `f` returns.
pub fn show<T>(f: impl FnOnce(Option<Arc<Progress>>) -> T) -> T {
    if !std::io::stderr().is_terminal() {
        return f(None);
    }
    let p = Arc::new(Progress::default());
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let poller = s.spawn(|| poll(&p, &done));
        let out = f(Some(p.clone()));
        done.store(true, Relaxed);
        // the poller only draws; if it panicked the run still stands
        let _ = poller.join();
        out
    })
}

fn poll(p: &Progress, done: &AtomicBool) {
    let t0 = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    while !done.load(Relaxed) {
        std::thread::sleep(REFRESH);
        if t0.elapsed() < SHOW_AFTER {
            continue;
        }
        let bar = bar.get_or_insert_with(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                .with_elapsed(t0.elapsed());
            b.set_style(
                ProgressStyle::with_template("{spinner} simulating: {msg} ({elapsed})")
                    .expect("valid template"),
            );
            b
        });
        bar.set_message(line(p.events.load(Relaxed), p.now.load(Relaxed)));
        bar.tick();
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

/// `12.3 M events, 4.567 s simulated`.
fn line(events: u64, now_ns: u64) -> String {
    format!(
        "{:.1} M events, {:.3} s simulated",
        events as f64 / 1e6,
        now_ns as f64 / 1e9
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_line_reads_events_and_simulated_time() {
        assert_eq!(
            super::line(12_345_678, 4_567_000_000),
            "12.3 M events, 4.567 s simulated"
        );
    }
}
