//! [`Collective`] over MPI (the `mpi` feature): the ranks that `mpirun`
//! starts, in place of the NCCL process group that `torchrun` starts for
//! build-nanogpt.
//!
//! A blocking `MPI_Allreduce` waits forever for a rank that hangs (a stopped
//! process, a machine that dropped off the network). So every collective
//! here is started non-blocking and polled against a deadline; past it, the
//! rank says which collective of which rank waited how long, and
//! `MPI_Abort` ends every rank. A rank that exits is noticed by `mpirun`
//! itself, which then stops the others; a rank that fails with an error or
//! a panic aborts too ([`Collective::abort`]), since returning would leave it
//! waiting in `MPI_Finalize` for ranks that wait for it.

use crate::ddp::Collective;
use mpi::collective::SystemOperation;
use mpi::environment::{Threading, Universe};
use mpi::request::{scope, Request, Scope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::time::{Duration, Instant};

/// The exit status of a rank that gave up waiting.
const TIMED_OUT: i32 = 3;
/// The exit status of a rank that failed with an error or panicked.
const FAILED: i32 = 1;

/// This process's place among `mpirun`'s ranks. Dropping it finalizes MPI.
pub struct MpiProcesses {
    world: SimpleCommunicator,
    timeout: Duration,
    // Last, so that the communicator goes before MPI_Finalize.
    _universe: Universe,
}

impl MpiProcesses {
    /// `MPI_Init_thread`: only this thread calls MPI, while the matmuls run
    /// on others (`MPI_THREAD_FUNNELED`). A process started without `mpirun`
    /// is rank 0 of 1. `timeout` bounds every wait for the other ranks. A
    /// panic from here on aborts every rank after its message.
    pub fn init(timeout: Duration) -> Result<MpiProcesses, String> {
        let (universe, _) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or("MPI was already initialized in this process")?;
        let message = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            message(info);
            SimpleCommunicator::world().abort(FAILED);
        }));
        Ok(MpiProcesses {
            world: universe.world(),
            timeout,
            _universe: universe,
        })
    }

    /// How many ranks share this rank's machine (`MPI_COMM_TYPE_SHARED`).
    pub fn ranks_on_this_machine(&self) -> usize {
        self.world.split_shared(self.world.rank()).size() as usize
    }

    /// Polls `request` until it completes, or ends the job past the deadline.
    fn wait<'a, R: ?Sized, S: Scope<'a>>(&self, mut request: Request<'a, R, S>, what: &str) {
        let started = Instant::now();
        loop {
            match request.test() {
                Ok(_) => return,
                Err(pending) => request = pending,
            }
            let waited = started.elapsed();
            if waited > self.timeout {
                eprintln!(
                    "error: rank {} of {}: waited {:.0} s for the other ranks to exchange {what}; \
                     a rank has died or hangs (--ddp-timeout {}); stopping every rank",
                    self.rank(),
                    self.world_size(),
                    waited.as_secs_f64(),
                    self.timeout.as_secs()
                );
                self.world.abort(TIMED_OUT);
            }
            // Each test moves the exchange on (OpenMPI's non-blocking
            // collectives progress only inside MPI calls), so poll without
            // sleeping, as MPI's own blocking wait does, but yield the core.
            std::thread::yield_now();
        }
    }
}

impl Collective for MpiProcesses {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn world_size(&self) -> usize {
        self.world.size() as usize
    }

    fn all_reduce_sum(&self, values: &mut [f32], what: &str) {
        let send = values.to_vec();
        scope(|scope| {
            let request = self.world.immediate_all_reduce_into(
                scope,
                &send[..],
                values,
                SystemOperation::sum(),
            );
            self.wait(request, what);
        });
    }

    fn abort(&self, message: &str) -> ! {
        eprintln!(
            "error: rank {} of {}: {message}",
            self.rank(),
            self.world_size()
        );
        self.world.abort(FAILED)
    }

    fn all_gather(&self, values: &[u64], what: &str) -> Vec<u64> {
        let mut all = vec![0u64; values.len() * self.world_size()];
        scope(|scope| {
            let request = self
                .world
                .immediate_all_gather_into(scope, values, &mut all[..]);
            self.wait(request, what);
        });
        all
    }
}
