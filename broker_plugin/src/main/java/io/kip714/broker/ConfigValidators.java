package io.kip714.broker;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/** ConfigDef validators whose messages say the whole allowed range, naming the key. */
final class ConfigValidators {
    private ConfigValidators() {
    }

    static ConfigDef.Validator between(long min, long max) {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                long number = ((Number) value).longValue();
                if (number < min || number > max) {
                    throw new ConfigException(name, value, "must be between " + min + " and " + max);
                }
            }

            @Override
            public String toString() {
                return "[" + min + ",...," + max + "]";
            }
        };
    }

    /** -1 (meaning "let the plugin or broker choose"), or a value in [min, max]. */
    static ConfigDef.Validator minusOneOrBetween(long min, long max) {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                long number = ((Number) value).longValue();
                if (number != -1 && (number < min || number > max)) {
                    throw new ConfigException(name, value, "must be -1 (default) or between " + min + " and " + max);
                }
            }

            @Override
            public String toString() {
                return "-1 or [" + min + ",...," + max + "]";
            }
        };
    }

    static ConfigDef.Validator nonBlank() {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value == null || String.valueOf(value).isBlank()) {
                    throw new ConfigException(name, value, "must not be empty");
                }
            }

            @Override
            public String toString() {
                return "non-empty string";
            }
        };
    }
}
