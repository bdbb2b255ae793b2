//! What happens to a tensor's memory once it is freed: kept by the allocator
//! for the next step, as PyTorch's caching allocator keeps it.

/// `mi_option_purge_delay`: the 16th entry of mimalloc.h's `mi_option_e`,
/// which libmimalloc-sys does not name.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Tells mimalloc to keep the pages it frees. A training step allocates and
/// frees the same large tensors (a 1,024 × 50,304 logits tensor is 206 MB)
/// each step; returned to the OS, they come back as fresh pages that the
/// kernel zeroes, which took a third of lecture 9's `cpu` stage's time. With
/// two threads faulting pages in at once it is worse still: lecture 7's `cpu`
/// step ran slower on two threads than on one. Kept, the
/// peak memory stays the process's, as PyTorch's caching allocator keeps it.
pub fn keep_freed_memory() {
    // SAFETY: mi_option_set only stores an option value; any value is valid
    // for the purge delay (-1: never purge).
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

#[cfg(test)]
mod tests {
    #[test]
    fn option_15_is_mimallocs_purge_delay() {
        // mimalloc v3's options.c: `{ 1000, ..., MI_OPTION_LEGACY(purge_delay,reset_delay) }`,
        // the only option whose default is 1000.
        // SAFETY: mi_option_get only reads an option's value; 15 is a valid option.
        let get = || unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(get(), 1000);
        super::keep_freed_memory();
        assert_eq!(get(), -1);
    }
}
