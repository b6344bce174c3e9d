//! Spawning a coroutine from the HTTP layer without `unsafe` in natter.

use std::io;

/// Spawning a coroutine is `unsafe` in may's API (its soundness rests on
/// not touching thread-locals across yields); the `go!` macro keeps that
/// `unsafe` inside may.
pub(crate) trait SpawnCo {
    fn spawn_co<F: FnOnce() + Send + 'static>(
        self,
        f: F,
    ) -> io::Result<may::coroutine::JoinHandle<()>>;
}

impl SpawnCo for may::coroutine::Builder {
    fn spawn_co<F: FnOnce() + Send + 'static>(
        self,
        f: F,
    ) -> io::Result<may::coroutine::JoinHandle<()>> {
        may::go!(self, f)
    }
}

/// Spawns `f` as a coroutine built by `builder` (see `SpawnCo`).
pub(crate) fn spawn_co<F: FnOnce() + Send + 'static>(
    builder: may::coroutine::Builder,
    f: F,
) -> io::Result<may::coroutine::JoinHandle<()>> {
    builder.spawn_co(f)
}
