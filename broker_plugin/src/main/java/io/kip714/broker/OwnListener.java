package io.kip714.broker;

import org.apache.kafka.common.config.ConfigException;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * One entry of the broker's {@code listeners}/{@code advertised.listeners}: the default target of
 * the plugin's producer when {@code kip714.bootstrap.servers} is not set.
 */
record OwnListener(String name, String host, int port, String securityProtocol) {
    String hostPort() {
        return host + ":" + port;
    }

    /**
     * The broker's own client listener: advertised listeners first (what clients use), then
     * listeners; controller listeners are skipped; a PLAINTEXT one is preferred because it needs
     * no credentials. A wildcard bind host means "this machine", so 127.0.0.1 is used.
     */
    static OwnListener of(Map<String, ?> configs) {
        Set<String> controllerNames = new HashSet<>();
        for (String name : text(configs, "controller.listener.names").split(",")) {
            if (!name.isBlank()) {
                controllerNames.add(name.trim().toUpperCase(Locale.ROOT));
            }
        }
        Map<String, String> protocolMap = new HashMap<>();
        for (String pair : text(configs, "listener.security.protocol.map").split(",")) {
            String[] parts = pair.split(":", 2);
            if (parts.length == 2) {
                protocolMap.put(parts[0].trim().toUpperCase(Locale.ROOT), parts[1].trim().toUpperCase(Locale.ROOT));
            }
        }
        for (String key : List.of("advertised.listeners", "listeners")) {
            List<OwnListener> candidates = new ArrayList<>();
            for (String entry : text(configs, key).split(",")) {
                if (entry.isBlank()) {
                    continue;
                }
                OwnListener listener = parse(key, entry.trim(), protocolMap);
                if (!controllerNames.contains(listener.name())) {
                    candidates.add(listener);
                }
            }
            for (OwnListener candidate : candidates) {
                if ("PLAINTEXT".equals(candidate.securityProtocol())) {
                    return candidate;
                }
            }
            if (!candidates.isEmpty()) {
                return candidates.get(0);
            }
        }
        throw new ConfigException(PluginConfig.BOOTSTRAP_SERVERS, "",
            "not set, and no non-controller entry in advertised.listeners or listeners to derive it from");
    }

    private static OwnListener parse(String key, String entry, Map<String, String> protocolMap) {
        int schemeEnd = entry.indexOf("://");
        int portStart = entry.lastIndexOf(':');
        if (schemeEnd <= 0 || portStart <= schemeEnd + 2) {
            throw new ConfigException(key, entry, "listener must look like NAME://host:port");
        }
        String name = entry.substring(0, schemeEnd).toUpperCase(Locale.ROOT);
        String host = entry.substring(schemeEnd + 3, portStart);
        int port;
        try {
            port = Integer.parseInt(entry.substring(portStart + 1));
        } catch (NumberFormatException e) {
            throw new ConfigException(key, entry, "listener port must be an integer");
        }
        if (host.isEmpty() || host.equals("0.0.0.0") || host.equals("[::]") || host.equals("::")) {
            host = "127.0.0.1";
        }
        return new OwnListener(name, host, port, protocolMap.getOrDefault(name, name));
    }

    /** A broker setting as text; a list (as the broker may pass one) is joined with commas. */
    static String text(Map<String, ?> configs, String key) {
        Object value = configs.get(key);
        if (value == null) {
            return "";
        }
        if (value instanceof List<?> list) {
            return String.join(",", list.stream().map(String::valueOf).toList());
        }
        return String.valueOf(value).trim();
    }
}
