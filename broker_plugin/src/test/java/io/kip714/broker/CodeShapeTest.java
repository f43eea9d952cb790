package io.kip714.broker;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Keeps the plugin readable: each main source file under 250 lines and each method under 60.
 * Methods are found by the project's formatting (a declaration with parameters at 4 spaces, closed
 * by "}" at the same indentation), which is all this check needs.
 */
class CodeShapeTest {
    static final int MAX_CLASS_LINES = 250;
    static final int MAX_METHOD_LINES = 60;
    /** A member declaration with parameters at class level: a method, a constructor or a record. */
    private static final Pattern METHOD = Pattern.compile("^    (?!return\\b|if\\b|for\\b|while\\b|switch\\b|try\\b|@)\\w[^=;]*\\(.*");

    @Test
    void classesAndMethodsStaySmall() throws IOException {
        List<String> tooLong = new ArrayList<>();
        try (Stream<Path> files = Files.list(Path.of("src", "main", "java", "io", "kip714", "broker"))) {
            for (Path file : files.sorted().toList()) {
                List<String> lines = Files.readAllLines(file);
                if (lines.size() > MAX_CLASS_LINES) {
                    tooLong.add(file.getFileName() + " has " + lines.size() + " lines");
                }
                tooLong.addAll(longMethods(file.getFileName().toString(), lines));
            }
        }
        assertEquals(List.of(), tooLong);
    }

    private static List<String> longMethods(String file, List<String> lines) {
        List<String> found = new ArrayList<>();
        for (int start = 0; start < lines.size(); start++) {
            if (!METHOD.matcher(lines.get(start)).matches()) {
                continue;
            }
            int end = start + 1;
            while (end < lines.size() && !lines.get(end).equals("    }")) {
                end++;
            }
            if (end - start + 1 > MAX_METHOD_LINES) {
                found.add(file + ":" + (start + 1) + " method of " + (end - start + 1) + " lines");
            }
        }
        return found;
    }
}
