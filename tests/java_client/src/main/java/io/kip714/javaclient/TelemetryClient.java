package io.kip714.javaclient;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * Runs a real Apache Kafka Java producer and/or consumer with KIP-714 metrics push on, for a
 * bounded time, so integration tests can see Java-client telemetry on the topic. Prints one JSON
 * line per client to stdout: {"role":..,"client_id":..,"client_instance_id":..,"records":..}.
 *
 * <pre>
 * java -cp kip714-java-client.jar io.kip714.javaclient.TelemetryClient \
 *   --bootstrap-server 127.0.0.1:9092 --client-id my-app --seconds 10 [--mode producer|consumer|both]
 *   [--topic T] [--group-id G] [--sasl-username U --sasl-password P] [--no-metrics-push]
 * </pre>
 */
public final class TelemetryClient {
    private TelemetryClient() {
    }

    /** Parsed command line; unknown or malformed options exit with status 2 and say which. */
    record Options(String bootstrap, String clientId, double seconds, String mode, String topic, String groupId,
                   String saslUsername, String saslPassword, boolean metricsPush) {

        static Options parse(String[] args) {
            Map<String, String> values = new HashMap<>();
            boolean metricsPush = true;
            for (int i = 0; i < args.length; i++) {
                String arg = args[i];
                if (arg.equals("--no-metrics-push")) {
                    metricsPush = false;
                    continue;
                }
                if (!List.of("--bootstrap-server", "--client-id", "--seconds", "--mode", "--topic", "--group-id",
                    "--sasl-username", "--sasl-password").contains(arg)) {
                    throw new IllegalArgumentException("unknown option " + arg);
                }
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(arg + " needs a value");
                }
                values.put(arg, args[++i]);
            }
            String bootstrap = values.get("--bootstrap-server");
            if (bootstrap == null || bootstrap.isBlank()) {
                throw new IllegalArgumentException("--bootstrap-server is required");
            }
            String clientId = values.getOrDefault("--client-id", "kip714-java-client");
            double seconds;
            try {
                seconds = Double.parseDouble(values.getOrDefault("--seconds", "10"));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--seconds must be a number");
            }
            if (seconds <= 0 || seconds > 3600) {
                throw new IllegalArgumentException("--seconds must be in (0, 3600]");
            }
            String mode = values.getOrDefault("--mode", "producer").toLowerCase(Locale.ROOT);
            if (!List.of("producer", "consumer", "both").contains(mode)) {
                throw new IllegalArgumentException("--mode must be producer, consumer or both");
            }
            String username = values.get("--sasl-username");
            String password = values.get("--sasl-password");
            if ((username == null) != (password == null)) {
                throw new IllegalArgumentException("--sasl-username and --sasl-password go together");
            }
            return new Options(bootstrap, clientId, seconds, mode, values.getOrDefault("--topic", "kip714-java-client"),
                values.getOrDefault("--group-id", clientId + "-group"), username, password, metricsPush);
        }
    }

    public static void main(String[] args) throws Exception {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
            return;
        }
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        if (!options.mode().equals("consumer")) {
            threads.add(new Thread(() -> guarded(failures, () -> runProducer(options)), "producer"));
        }
        if (!options.mode().equals("producer")) {
            threads.add(new Thread(() -> guarded(failures, () -> runConsumer(options)), "consumer"));
        }
        threads.forEach(Thread::start);
        for (Thread thread : threads) {
            thread.join();
        }
        if (!failures.isEmpty()) {
            failures.get(0).printStackTrace();
            System.exit(1);
        }
    }

    private interface Body {
        void run() throws Exception;
    }

    private static void guarded(List<Throwable> failures, Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            synchronized (failures) {
                failures.add(t);
            }
        }
    }

    private static Properties common(Options options, String clientId) {
        Properties props = new Properties();
        props.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, options.bootstrap());
        props.put(CommonClientConfigs.CLIENT_ID_CONFIG, clientId);
        props.put("enable.metrics.push", String.valueOf(options.metricsPush()));
        if (options.saslUsername() != null) {
            props.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
            props.put("sasl.mechanism", "PLAIN");
            props.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required "
                + "username=\"" + options.saslUsername() + "\" password=\"" + options.saslPassword() + "\";");
        }
        return props;
    }

    private static void runProducer(Options options) throws Exception {
        Properties props = common(options, options.clientId());
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        long sent = 0;
        String instanceId;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            long end = System.nanoTime() + (long) (options.seconds() * 1e9);
            instanceId = "";
            while (System.nanoTime() < end) {
                producer.send(new ProducerRecord<>(options.topic(), "k" + (sent % 16), "v" + sent));
                sent++;
                if (instanceId.isEmpty() && options.metricsPush()) {
                    instanceId = instanceId(() -> producer.clientInstanceId(Duration.ofSeconds(5)), true);
                }
                Thread.sleep(50);
            }
            producer.flush();
        } // close() sends the final, terminating push
        report("producer", options.clientId(), instanceId, sent);
    }

    private static void runConsumer(Options options) throws Exception {
        String clientId = options.mode().equals("both") ? options.clientId() + "-consumer" : options.clientId();
        Properties props = common(options, clientId);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, options.groupId());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        long received = 0;
        String instanceId = "";
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(options.topic()));
            long end = System.nanoTime() + (long) (options.seconds() * 1e9);
            do {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                received += records.count();
                if (instanceId.isEmpty() && options.metricsPush()) {
                    // The classic consumer does network I/O only inside poll(): never wait here.
                    instanceId = instanceId(() -> consumer.clientInstanceId(Duration.ZERO), false);
                }
            } while (System.nanoTime() < end);
            if (instanceId.isEmpty() && options.metricsPush()) {
                System.err.println("client instance id unavailable: no telemetry subscription reached the consumer");
            }
        }
        report("consumer", clientId, instanceId, received);
    }

    private interface InstanceIdCall {
        Uuid call();
    }

    /** The broker-assigned instance id, or "" when the broker does not offer telemetry. */
    private static String instanceId(InstanceIdCall call, boolean reportMissing) {
        try {
            Uuid id = call.call();
            if (id == null) {
                if (reportMissing) {
                    System.err.println("client instance id unavailable: the broker offers no telemetry");
                }
                return "";
            }
            return id.toString();
        } catch (RuntimeException e) {
            System.err.println("client instance id unavailable: " + e);
            return "";
        }
    }

    private static synchronized void report(String role, String clientId, String instanceId, long records) {
        System.out.printf("{\"role\":\"%s\",\"client_id\":\"%s\",\"client_instance_id\":\"%s\",\"records\":%d}%n",
            role, clientId.replace("\"", "\\\""), instanceId, records);
        System.out.flush();
    }
}
