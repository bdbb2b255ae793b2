"""The timing that matmul_torch.py and rows_torch.py share, imported with a sys.path
insert of their own folder."""
import time


def best_seconds(a, b, flop, rounds):
    """Seconds per a @ b, the best of `rounds` timed rounds after 3 untimed products;
    enough calls per round for ~0.2 s, so timer overhead does not count."""
    reps = max(1, int(2e10 // flop))
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            a @ b
        best = min(best, (time.perf_counter() - t0) / reps)
    return best
