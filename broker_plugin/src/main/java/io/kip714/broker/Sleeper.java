package io.kip714.broker;

/** Waits between retries; injectable so tests need not wait for real. */
@FunctionalInterface
interface Sleeper {
    /** Waits {@code millis}; throws when the waiting thread is interrupted (the plugin is closing). */
    void sleep(long millis) throws InterruptedException;
}
