/* The interposer's per-thread word pair (src/rt/guard.rs): its thread state
 * and whether the thread is inside the tool. Defined here because only C
 * can choose the initial-exec TLS model on stable Rust: the hot path then
 * finds it at a fixed offset from the thread pointer (two loads), where
 * Rust's own thread_local! in a shared library calls __tls_get_addr, and
 * that call makes every wrapper save and reload its arguments around it.
 * Initial-exec needs the library in the static TLS block: true of a
 * preloaded one, and glibc keeps room for a few such bytes in a library
 * opened later. */
struct mpiover_tls {
    /* First, so that its address is the pair's (one instruction less on
     * every call). */
    unsigned char busy;
    void *ts;
};

/* Until the thread's first call, its state is this all-zero block (defined
 * in src/rt/guard.rs), never a null pointer: the guard's test
 * of the state's word then also finds the thread without a state, and the
 * hot path has no null test. The loader relocates the TLS image before it
 * copies it into any thread. */
extern const unsigned char mpiover_no_thread_state[];

__attribute__((tls_model("initial-exec"), visibility("hidden")))
__thread struct mpiover_tls mpiover_tls = { 0, (void *)mpiover_no_thread_state };
