package io.kip714.broker;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Every {@code kip714.broker.metrics.interval.ms}, turns the broker's KIP-714 metrics and the
 * plugin's counters into broker records, and logs one line when drops grew since the last time.
 */
final class BrokerMetricsTask {
    private static final Logger log = LoggerFactory.getLogger(BrokerMetricsTask.class);

    private final PluginConfig config;
    private final BrokerMetricsCollector collector;
    private final PluginStats stats;
    private final PushIntake intake;
    private final Supplier<String> clusterId;
    private final LongSupplier buffered;
    private long droppedAtLastLog;
    private ScheduledExecutorService timer;

    BrokerMetricsTask(PluginConfig config, BrokerMetricsCollector collector, PluginStats stats, PushIntake intake,
                      Supplier<String> clusterId, LongSupplier buffered) {
        this.config = config;
        this.collector = collector;
        this.stats = stats;
        this.intake = intake;
        this.clusterId = clusterId;
        this.buffered = buffered;
    }

    synchronized void start() {
        timer = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "kip714-broker-metrics-" + config.nodeId);
            thread.setDaemon(true);
            return thread;
        });
        timer.scheduleAtFixedRate(this::runSafely, config.brokerMetricsIntervalMs, config.brokerMetricsIntervalMs,
            TimeUnit.MILLISECONDS);
    }

    /** Stops the timer thread, waiting at most a second for a run in progress. */
    synchronized void stop() {
        if (timer == null) {
            return;
        }
        timer.shutdownNow();
        try {
            timer.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void runSafely() {
        try {
            long droppedNow = stats.droppedTotal();
            if (droppedNow != droppedAtLastLog) {
                // One line per interval at most, so a broken target cannot flood the broker log.
                log.warn("kip714 telemetry plugin dropped {} records so far (by reason {}); exported {}",
                    droppedNow, stats.droppedByReason(), stats.exported());
                droppedAtLastLog = droppedNow;
            }
            enqueueBrokerRecords();
        } catch (Throwable unexpected) {
            stats.countDrop(PluginStats.DROP_PLUGIN_ERROR);
            log.warn("kip714 telemetry plugin could not build the broker metrics record", unexpected);
        }
    }

    /** Builds this interval's broker records and offers them to the sender. */
    void enqueueBrokerRecords() {
        byte[] key = TopicContract.brokerRecordKey(config.nodeId).getBytes(StandardCharsets.UTF_8);
        long now = System.currentTimeMillis();
        String cluster = clusterId.get();
        for (byte[] value : collector.collect(config.nodeId, cluster, counters(), config.brokerMetricsInstancesPerRecord)) {
            intake.offer(new PendingRecord(key, value, PushLabels.brokerHeaders(config.nodeId, cluster), now));
        }
    }

    BrokerMetricsCollector.PluginCounters counters() {
        return new BrokerMetricsCollector.PluginCounters(stats.startTimeNanos(), stats.droppedByReason(),
            stats.exported(), buffered.getAsLong());
    }
}
