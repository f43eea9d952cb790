package io.kip714.broker;

/** The plugin's version, written as the OTLP instrumentation scope version. */
final class PluginVersion {
    static final String VERSION = "0.1.0";

    private PluginVersion() {
    }
}
