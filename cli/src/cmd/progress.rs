//! `--progress`: how a grading's reading of the logs is shown on stderr.
//! On a terminal, a bar redrawn in place; in a job's log (stderr a file
//! or a pipe, as under a scheduler), a short line now and then, each
//! ended by a newline, so the log stays readable and grows slowly.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, HumanCount, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rgrade::Progress;

use super::terminal::tell;
use crate::cli::ProgressWhen;

/// What to tell the library's progress to, for `--progress when`
/// with a line every `every` (`None`: show nothing).
pub fn shown(when: ProgressWhen, every: Duration) -> Option<Arc<dyn Progress>> {
    match when {
        ProgressWhen::Never => None,
        ProgressWhen::Auto if std::io::stderr().is_terminal() => Some(Arc::new(Bar::default())),
        ProgressWhen::Auto | ProgressWhen::Lines => Some(Arc::new(Lines::new(every))),
    }
}

/// A bar over the inputs' bytes, redrawn in place on the terminal.
#[derive(Debug)]
struct Bar(ProgressBar);

impl Default for Bar {
    fn default() -> Self {
        Bar(ProgressBar::with_draw_target(
            None,
            ProgressDrawTarget::stderr(),
        ))
    }
}

impl Progress for Bar {
    fn started(&self, bytes: Option<u64>) {
        if let Some(bytes) = bytes {
            self.0.set_length(bytes);
        }
        let template = "{spinner} {bytes}/{total_bytes} {bytes_per_sec} {wide_bar} {eta}";
        if let Ok(style) = ProgressStyle::with_template(template) {
            self.0.set_style(style);
        }
    }

    fn read(&self, bytes: u64) {
        self.0.inc(bytes);
    }

    fn judged(&self, _: u64) {}

    fn finished(&self) {
        self.0.finish_and_clear();
    }
}

/// A line on stderr at most once every `every`, as the reading goes:
/// bytes read (of how many, when known), records judged, the read rate.
#[derive(Debug)]
struct Lines {
    every: Duration,
    start: Instant,
    /// When the last line was written (the start, before the first).
    last: Mutex<Instant>,
    total: AtomicU64,
    bytes: AtomicU64,
    records: AtomicU64,
}

/// [`Lines::total`] while the inputs' size is not known.
const UNKNOWN: u64 = u64::MAX;

impl Lines {
    fn new(every: Duration) -> Self {
        let start = Instant::now();
        Lines {
            every,
            start,
            last: Mutex::new(start),
            total: AtomicU64::new(UNKNOWN),
            bytes: AtomicU64::new(0),
            records: AtomicU64::new(0),
        }
    }

    /// Write a line if the last is `every` old. The reading and the
    /// calling thread both get here; the lock orders their lines, so the
    /// later line counts what the earlier did.
    fn maybe_tell(&self) {
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let now = Instant::now();
        if now.duration_since(*last) < self.every {
            return;
        }
        *last = now;
        let bytes = self.bytes.load(Ordering::Relaxed);
        let records = self.records.load(Ordering::Relaxed);
        let seconds = now.duration_since(self.start).as_secs_f64();
        let of_total = match self.total.load(Ordering::Relaxed) {
            UNKNOWN => String::new(),
            0 => " of 0 B".to_string(),
            total => format!(
                " of {} ({:.0}%)",
                HumanBytes(total),
                100.0 * bytes as f64 / total as f64
            ),
        };
        let rate = if seconds > 0.0 {
            bytes as f64 / seconds
        } else {
            0.0
        };
        tell(format_args!(
            "rgrade: progress: {} read{of_total}, {} records, {}/s, {seconds:.0} s",
            HumanBytes(bytes),
            HumanCount(records),
            HumanBytes(rate as u64),
        ));
    }
}

impl Progress for Lines {
    fn started(&self, bytes: Option<u64>) {
        self.total
            .store(bytes.unwrap_or(UNKNOWN), Ordering::Relaxed);
    }

    fn read(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.maybe_tell();
    }

    fn judged(&self, records: u64) {
        self.records.fetch_add(records, Ordering::Relaxed);
        self.maybe_tell();
    }

    fn finished(&self) {}
}
