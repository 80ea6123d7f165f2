package io.mockbroker.jvmtools;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON ToolRunner reads: objects, arrays, strings, integers, true, false and
 * null (Jackson is only a runtime dependency of Kafka, not on the compile class path); it
 * answers through io.mockbroker.jvmjson.Json.
 */
final class MiniJson {
    private final String text;
    private int at;

    private MiniJson(String text) {
        this.text = text;
    }

    /** Parses one JSON object (the whole text). */
    @SuppressWarnings("unchecked")
    static Map<String, Object> parseObject(String text) {
        MiniJson parser = new MiniJson(text);
        Object value = parser.value();
        parser.skipSpace();
        if (parser.at != text.length() || !(value instanceof Map)) {
            throw new IllegalArgumentException("not one JSON object: " + text);
        }
        return (Map<String, Object>) value;
    }

    private void skipSpace() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
    }

    private char next() {
        skipSpace();
        if (at >= text.length()) {
            throw new IllegalArgumentException("JSON ends early: " + text);
        }
        return text.charAt(at);
    }

    private void expect(char c) {
        if (next() != c) {
            throw new IllegalArgumentException("expected '" + c + "' at " + at + ": " + text);
        }
        at++;
    }

    private Object value() {
        char c = next();
        if (c == '{') {
            at++;
            Map<String, Object> map = new LinkedHashMap<>();
            if (next() == '}') {
                at++;
                return map;
            }
            while (true) {
                String key = string();
                expect(':');
                map.put(key, value());
                if (next() == ',') {
                    at++;
                    continue;
                }
                expect('}');
                return map;
            }
        }
        if (c == '[') {
            at++;
            List<Object> list = new ArrayList<>();
            if (next() == ']') {
                at++;
                return list;
            }
            while (true) {
                list.add(value());
                if (next() == ',') {
                    at++;
                    continue;
                }
                expect(']');
                return list;
            }
        }
        if (c == '"') {
            return string();
        }
        for (String word : new String[] {"null", "true", "false"}) {
            if (text.startsWith(word, at)) {
                at += word.length();
                return word.equals("null") ? null : Boolean.valueOf(word);
            }
        }
        int start = at;
        while (at < text.length() && "-0123456789".indexOf(text.charAt(at)) >= 0) {
            at++;
        }
        if (start == at) {
            throw new IllegalArgumentException("unexpected '" + c + "' at " + at + ": " + text);
        }
        return Long.parseLong(text.substring(start, at));
    }

    private String string() {
        expect('"');
        StringBuilder out = new StringBuilder();
        while (at < text.length()) {
            char c = text.charAt(at++);
            if (c == '"') {
                return out.toString();
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            char escaped = text.charAt(at++);
            switch (escaped) {
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'u' -> {
                    out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    at += 4;
                }
                default -> out.append(escaped);
            }
        }
        throw new IllegalArgumentException("unterminated string: " + text);
    }
}
