//! [`Collective`] over MPI (the `mpi` feature): the ranks that `mpirun`
//! starts, in place of the NCCL process group that `torchrun` starts for
//! build-nanogpt.
//!
//! A blocking `MPI_Allreduce` waits forever for a rank that hangs (a stopped
//! process, a machine that dropped off the network). So every collective
//! here is started non-blocking and polled against a deadline; past it, the
//! rank says which collective of which rank waited how long, and
//! `MPI_Abort` ends every rank. A rank that exits is noticed by `mpirun`
//! itself, which then stops the others.

use crate::ddp::Collective;
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::request::{scope, Request, Scope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::time::{Duration, Instant};

/// The exit status of a rank that gave up waiting.
const TIMED_OUT: i32 = 3;

/// This process's place among `mpirun`'s ranks. Dropping it finalizes MPI.
pub struct MpiProcesses {
    world: SimpleCommunicator,
    timeout: Duration,
    // Last, so that the communicator goes before MPI_Finalize.
    _universe: Universe,
}

impl MpiProcesses {
    /// `MPI_Init`. A process started without `mpirun` is rank 0 of 1.
    /// `timeout` bounds every wait for the other ranks.
    pub fn init(timeout: Duration) -> Result<MpiProcesses, String> {
        let universe = mpi::initialize().ok_or("MPI was already initialized in this process")?;
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
            // Spin briefly (ranks usually arrive together), then poll gently.
            if waited < Duration::from_millis(10) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
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
