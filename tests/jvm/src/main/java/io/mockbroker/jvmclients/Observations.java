package io.mockbroker.jvmclients;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.mockbroker.jvmjson.Json;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;

/**
 * The output of the suite's Java client programs: one JSON object per line on stdout, each an
 * observation ("kind" plus fields) the Python side parses and compares between mockbroker
 * and real Kafka. Strings, numbers, booleans, null, lists and maps are written; nothing else.
 */
final class Observations {
    static final long TIMEOUT_MS = 30_000;  // every blocking call of the programs is bounded
    /** Record timestamps are set from here and shown relative to it: an hour ago in whole
     * seconds, recent enough that time-based retention (7 days) never deletes them while a
     * run reads them back. */
    static final long BASE_TIMESTAMP = (System.currentTimeMillis() / 1000 - 3600) * 1000;

    private Observations() {
    }

    /** Only warnings and errors from the clients' logging: their INFO lines would bury the
     * observations on stdout. Log4j's core is only on the run-time class path (the pom
     * does not compile against it), hence the reflection. */
    static void quietLogging() throws ReflectiveOperationException {
        Class<?> level = Class.forName("org.apache.logging.log4j.Level");
        Class.forName("org.apache.logging.log4j.core.config.Configurator")
                .getMethod("setRootLevel", level)
                .invoke(null, level.getField("WARN").get(null));
    }

    /** One observation line: {"kind": kind, key: value, ...} in the order given. */
    static void emit(String kind, Object... keysAndValues) {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("kind", kind);
        for (int i = 0; i + 1 < keysAndValues.length; i += 2) {
            fields.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        System.out.println(Json.write(fields));
        System.out.flush();
    }

    /** A consumed record: partition, offset, key, value, timestamp (from BASE_TIMESTAMP) and
     * headers. */
    static Map<String, Object> record(ConsumerRecord<String, String> record) {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("p", record.partition());
        fields.put("o", record.offset());
        fields.put("k", record.key());
        fields.put("v", record.value());
        fields.put("ts", record.timestamp() - BASE_TIMESTAMP);
        fields.put("h", headers(record.headers()));
        return fields;
    }

    static List<List<String>> headers(Iterable<Header> headers) {
        List<List<String>> out = new ArrayList<>();
        for (Header header : headers) {
            String value = header.value() == null ? null
                    : new String(header.value(), StandardCharsets.UTF_8);
            List<String> pair = new ArrayList<>();
            pair.add(header.key());
            pair.add(value);
            out.add(pair);
        }
        return out;
    }

    /** Partition numbers, sorted. */
    static List<Integer> partitions(Collection<TopicPartition> partitions) {
        List<Integer> out = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            out.add(tp.partition());
        }
        out.sort(null);
        return out;
    }

    /** {"partition": value} for a map keyed by partitions, sorted by partition. */
    static Map<String, Object> byPartition(Map<TopicPartition, ?> values) {
        Map<String, Object> out = new LinkedHashMap<>();
        values.keySet().stream().sorted((a, b) -> Integer.compare(a.partition(), b.partition()))
                .forEach(tp -> out.put(Integer.toString(tp.partition()), values.get(tp)));
        return out;
    }

    static <T> T await(Future<T> future) throws Exception {
        return future.get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }
}
