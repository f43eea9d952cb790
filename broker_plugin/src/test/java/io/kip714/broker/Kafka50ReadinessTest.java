package io.kip714.broker;

import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kafka 5.0 removes the deprecated {@code ClientTelemetry} and {@code ClientTelemetryReceiver}
 * (deprecated since 4.2). The KIP-1217 exporter class must not reach them, neither in its class
 * files (checked over every plugin class it can reach) nor when a broker without them loads it
 * and hands it a push.
 */
class Kafka50ReadinessTest {
    static final String EXPORTER = "io.kip714.broker.ClientTelemetryTopicExporterReporter";
    static final Set<String> REMOVED_IN_5 = Set.of(
        "org.apache.kafka.server.telemetry.ClientTelemetry",
        "org.apache.kafka.server.telemetry.ClientTelemetryReceiver");
    private static final Pattern DESCRIPTOR_CLASS = Pattern.compile("L([\\w/$]+);");

    @Test
    void noClassReachableFromTheExporterReferencesTheRemovedInterfaces() throws IOException {
        Set<String> reachable = new TreeSet<>();
        Set<String> referencedKafka = new TreeSet<>();
        Deque<String> todo = new ArrayDeque<>(List.of(EXPORTER));
        while (!todo.isEmpty()) {
            String name = todo.pop();
            if (!reachable.add(name)) {
                continue;
            }
            for (String referenced : referencedClasses(name)) {
                if (referenced.startsWith("io.kip714.broker.")) {
                    todo.push(referenced);
                } else if (referenced.startsWith("org.apache.kafka.")) {
                    referencedKafka.add(referenced);
                }
            }
        }
        assertTrue(reachable.contains("io.kip714.broker.PushLabels"), reachable.toString());
        assertTrue(referencedKafka.contains("org.apache.kafka.server.telemetry.ClientTelemetryExporter"),
            referencedKafka.toString());
        for (String removed : REMOVED_IN_5) {
            assertFalse(referencedKafka.contains(removed), removed + " is referenced from " + reachable);
        }
        // The scan does see those names where they are used: the 3.x shell references both.
        assertTrue(referencedClasses("io.kip714.broker.ClientTelemetryTopicReporter").containsAll(REMOVED_IN_5));
    }

    @Test
    @SuppressWarnings("unchecked")
    void theExporterLoadsAndExportsWithTheRemovedInterfacesHidden() throws Exception {
        try (IsolatingClassLoader loader = new IsolatingClassLoader(IsolatingClassLoader.pluginClassDirs(),
                List.of("io.kip714."), REMOVED_IN_5)) {
            assertThrows(NoClassDefFoundError.class,
                () -> Class.forName("io.kip714.broker.ClientTelemetryTopicReporter", true, loader));
            Class<?> exporter = Class.forName(EXPORTER, true, loader);
            assertEquals(loader, exporter.getClassLoader());
            Map<String, Long> counted = (Map<String, Long>) loader.loadClass("io.kip714.broker.IsolatedExporterPush")
                .getMethod("exportOnePushThroughTheExporter").invoke(null);
            assertEquals(1L, counted.get("export-time-count"), counted.toString());
            assertEquals(0L, counted.get(PluginStats.DROP_PLUGIN_ERROR), counted.toString());
        }
    }

    /** Classes named in one class file's constant pool: Class entries and field/method descriptors. */
    static Set<String> referencedClasses(String className) throws IOException {
        String resource = "/" + className.replace('.', '/') + ".class";
        try (InputStream raw = Kafka50ReadinessTest.class.getResourceAsStream(resource)) {
            assertTrue(raw != null, "no class file for " + className);
            DataInputStream in = new DataInputStream(raw);
            in.readInt();
            in.readUnsignedShort();
            in.readUnsignedShort();
            int count = in.readUnsignedShort();
            String[] utf8 = new String[count];
            Set<Integer> classIndexes = new HashSet<>();
            for (int i = 1; i < count; i++) {
                int tag = in.readUnsignedByte();
                switch (tag) {
                    case 1 -> utf8[i] = in.readUTF();
                    case 7, 16, 19, 20 -> {
                        int index = in.readUnsignedShort();
                        if (tag == 7) {
                            classIndexes.add(index);
                        }
                    }
                    case 8 -> in.readUnsignedShort();
                    case 3, 4 -> in.readInt();
                    case 5, 6 -> {
                        in.readLong();
                        i++;
                    }
                    case 9, 10, 11, 12, 17, 18 -> in.readInt();
                    case 15 -> {
                        in.readUnsignedByte();
                        in.readUnsignedShort();
                    }
                    default -> throw new IOException("unknown constant pool tag " + tag + " in " + className);
                }
            }
            Set<String> names = new TreeSet<>();
            for (int index : classIndexes) {
                String name = utf8[index];
                if (!name.startsWith("[")) {
                    names.add(name.replace('/', '.'));
                }
            }
            for (String text : utf8) {
                if (text != null && (text.contains("(") || text.startsWith("L") || text.startsWith("["))) {
                    Matcher matcher = DESCRIPTOR_CLASS.matcher(text);
                    while (matcher.find()) {
                        names.add(matcher.group(1).replace('/', '.'));
                    }
                }
            }
            return names;
        }
    }
}
