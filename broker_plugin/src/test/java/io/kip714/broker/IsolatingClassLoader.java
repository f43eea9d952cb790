package io.kip714.broker;

import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;
import java.util.Set;

/**
 * Loads the plugin's classes (and any other listed package) itself rather than from the test's
 * class path, so they link against what this loader offers: another Kafka version's jar, or a Kafka
 * with some classes missing (hidden ones throw ClassNotFoundException, as on a broker without them).
 */
final class IsolatingClassLoader extends URLClassLoader {
    private final List<String> ownPrefixes;
    private final Set<String> hidden;

    IsolatingClassLoader(URL[] urls, List<String> ownPrefixes, Set<String> hidden) {
        super("kip714-isolated", urls, IsolatingClassLoader.class.getClassLoader());
        this.ownPrefixes = ownPrefixes;
        this.hidden = hidden;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (hidden.contains(name)) {
            throw new ClassNotFoundException(name + " (hidden: absent on the broker being imitated)");
        }
        synchronized (getClassLoadingLock(name)) {
            Class<?> loaded = findLoadedClass(name);
            if (loaded == null && ownPrefixes.stream().anyMatch(name::startsWith)) {
                loaded = findClass(name);
            }
            if (loaded == null) {
                loaded = getParent().loadClass(name);
            }
            if (resolve) {
                resolveClass(loaded);
            }
            return loaded;
        }
    }

    /** Where this test run's plugin classes (main and test) were compiled to. */
    static URL[] pluginClassDirs() {
        return new URL[] {
            PushLabels.class.getProtectionDomain().getCodeSource().getLocation(),
            IsolatingClassLoader.class.getProtectionDomain().getCodeSource().getLocation(),
        };
    }
}
