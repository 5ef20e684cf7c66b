//! The reader thread and the worker pool: the one way rgrade runs a job
//! over the blocks of its inputs, whether it loads labels, grades logs, or
//! only parses them in the parse-only benchmark.
//!
//! With one thread, that thread reads, works and takes each block in turn,
//! so `-j 1` uses one core. With more, a reader thread cuts blocks into a
//! bounded channel, the pool works them in any order, and the calling
//! thread takes each outcome; block buffers go back to the reader, so
//! memory stays a few blocks per worker whatever the size of the input.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, Sender, SyncSender};

use anyhow::{Context, Result};
use rayon::prelude::*;

use crate::io::blocks::{Chunk, ChunkSink, InlineSink};

/// The most worker threads a run starts: each holds blocks in flight, so
/// thousands of them would only spend memory and time on a typo.
const MAX_THREADS: usize = 1024;

/// One pool of `threads` workers (all cores, up to [`MAX_THREADS`], when
/// unset) for the labels, the logs and the grading.
///
/// # Errors
/// More than [`MAX_THREADS`] asked for; the threads cannot be started.
pub fn pool(threads: Option<NonZeroUsize>) -> Result<rayon::ThreadPool> {
    let threads = match threads {
        Some(asked) => {
            let asked = asked.get();
            anyhow::ensure!(
                asked <= MAX_THREADS,
                "{}: at most {MAX_THREADS} worker threads",
                crate::base::failure::Setting::Threads.given(asked)
            );
            asked
        }
        None => std::thread::available_parallelism()
            .map_or(1, NonZeroUsize::get)
            .min(MAX_THREADS),
    };
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("rgrade-worker-{i}"))
        .build()
        .context("cannot start the worker threads")
}

/// Run a job over every chunk that `read` sends its sink. Each worker
/// keeps a state made by `new_worker` and turns a chunk into an outcome
/// with `work`; the calling thread hands each outcome to `take` with the
/// chunk's number in read order (outcomes may arrive in any order).
/// When `take` returns false, reading stops early. Returns what `read`
/// returns. `G` is what a chunk of rows holds (the logs' row groups).
pub fn for_each_block<G, R, W, T>(
    pool: &rayon::ThreadPool,
    read: impl FnOnce(&mut dyn ChunkSink<G>) -> R + Send,
    new_worker: impl Fn() -> W + Sync,
    work: impl Fn(&mut W, &Chunk<G>) -> T + Sync,
    mut take: impl FnMut(u64, T) -> bool,
) -> R
where
    G: Send,
    R: Send,
    T: Send,
{
    let threads = pool.current_num_threads();
    if threads == 1 {
        let mut worker = new_worker();
        let mut number = 0;
        let mut sink = InlineSink::new(|chunk: &Chunk<G>| {
            number += 1;
            take(number - 1, work(&mut worker, chunk))
        });
        return read(&mut sink);
    }
    let (chunk_tx, chunk_rx) = sync_channel::<(u64, Chunk<G>)>(2 * threads);
    let (outcome_tx, outcome_rx) = sync_channel::<(u64, T)>(2 * threads);
    let (spent_tx, spent_rx) = std::sync::mpsc::channel();
    let stopped = AtomicBool::new(false);
    let stopped = &stopped;
    let read_result = std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            let mut sink = ChannelSink {
                chunks: chunk_tx,
                spent: spent_rx,
                sent: 0,
                stopped,
            };
            read(&mut sink)
        });
        let (new_worker, work) = (&new_worker, &work);
        scope.spawn(move || {
            pool.install(|| {
                chunk_rx.into_iter().par_bridge().for_each_init(
                    || (new_worker(), spent_tx.clone()),
                    |(worker, spent_tx): &mut (W, Sender<Vec<u8>>), (number, chunk)| {
                        if stopped.load(Ordering::Relaxed) {
                            return;
                        }
                        let outcome = work(worker, &chunk);
                        // The buffer goes back to the reader at once; if the
                        // reader has finished, it is simply freed.
                        let _ = spent_tx.send(chunk.into_buffer());
                        // A send fails only once the taker has stopped, and
                        // then nothing is left to do.
                        let _ = outcome_tx.send((number, outcome));
                    },
                );
            })
        });
        for (number, outcome) in outcome_rx.iter() {
            if !take(number, outcome) {
                // The reader sends nothing more and the workers skip what
                // is queued.
                stopped.store(true, Ordering::Relaxed);
                break;
            }
        }
        reader.join()
    });
    match read_result {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// The reader's end of the threaded pipeline: a bounded channel of
/// numbered chunks to the workers, and the buffers they hand back.
struct ChannelSink<'a, G> {
    chunks: SyncSender<(u64, Chunk<G>)>,
    spent: Receiver<Vec<u8>>,
    sent: u64,
    /// Set once the taker wants no more.
    stopped: &'a AtomicBool,
}

impl<G> ChunkSink<G> for ChannelSink<'_, G> {
    fn send(&mut self, chunk: Chunk<G>) -> bool {
        if self.stopped.load(Ordering::Relaxed) {
            return false;
        }
        self.sent += 1;
        self.chunks.send((self.sent - 1, chunk)).is_ok()
    }

    fn recycled(&mut self) -> Option<Vec<u8>> {
        self.spent.try_recv().ok()
    }
}
