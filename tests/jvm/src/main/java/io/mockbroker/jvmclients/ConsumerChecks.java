package io.mockbroker.jvmclients;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The Java consumer in a group against one cluster:
 * `ConsumerChecks <bootstrap> <topic-prefix> <classic|consumer>` (the group.protocol).
 *
 * <p>Steps: consumer "a" joins alone and gets all four partitions of a new topic; "b" joins
 * and the partitions are split; records produced then are consumed by both, and each commits
 * its positions; "b" leaves and "a" takes everything back, then leaves; new records are
 * produced; consumer "c" joins the same group and resumes from the committed positions. "c"
 * then checks committed/beginningOffsets/endOffsets/offsetsForTimes, seek, seekToBeginning,
 * seekToEnd and position, and a commit with metadata. Last (classic only), consumer "d" of
 * another group exceeds max.poll.interval.ms and loses its partitions. Every
 * ConsumerRebalanceListener call
 * (assigned, revoked, lost) is an observation, in the order the consumers saw them.
 */
public final class ConsumerChecks {
    private static final int PARTITIONS = 4;
    private static final Duration POLL = Duration.ofMillis(100);
    private static final int MAX_POLL_INTERVAL_MS = 1_000;

    private ConsumerChecks() {
    }

    /** Listener calls so far, per consumer. */
    private static final Map<String, Integer> CALLS = new HashMap<>();

    /** Records each listener call as an observation line (and counts it in CALLS). */
    private record Listener(String consumer) implements ConsumerRebalanceListener {
        private void seen(String event, Collection<TopicPartition> partitions) {
            CALLS.merge(consumer, 1, Integer::sum);
            Observations.emit("rebalance", "consumer", consumer, "event", event,
                    "partitions", Observations.partitions(partitions));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            seen("revoked", partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            seen("assigned", partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            seen("lost", partitions);
        }
    }

    public static void main(String[] args) throws Exception {
        Observations.quietLogging();
        String bootstrap = args[0];
        String topic = args[1] + "-" + args[2];
        String protocol = args[2];
        String group = topic + "-group";
        Clients.createTopics(bootstrap, Map.of(topic, PARTITIONS));
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            all.add(new TopicPartition(topic, p));
        }
        try (KafkaProducer<String, String> producer = Clients.producer(bootstrap)) {
            KafkaConsumer<String, String> a = consumer(bootstrap, group, protocol, "a");
            a.subscribe(List.of(topic), new Listener("a"));
            pollUntil("a owns all", () -> a.assignment().size() == PARTITIONS, a);
            Observations.emit("step", "name", "a alone",
                    "a", Observations.partitions(a.assignment()));

            KafkaConsumer<String, String> b = consumer(bootstrap, group, protocol, "b");
            b.subscribe(List.of(topic), new Listener("b"));
            pollUntil("a and b share", () -> a.assignment().size() == 2
                    && b.assignment().size() == 2, a, b);
            Observations.emit("step", "name", "a and b",
                    "a", Observations.partitions(a.assignment()),
                    "b", Observations.partitions(b.assignment()));

            produce(producer, topic, 0, 2);
            Map<String, List<ConsumerRecord<String, String>>> got = new LinkedHashMap<>();
            got.put("a", new ArrayList<>());
            got.put("b", new ArrayList<>());
            pollUntil("8 records", () -> got.get("a").size() + got.get("b").size() >= 8,
                    Map.of("a", a, "b", b), got);
            for (Map.Entry<String, List<ConsumerRecord<String, String>>> entry : got.entrySet()) {
                for (ConsumerRecord<String, String> record : entry.getValue()) {
                    Observations.emit("consumed", "consumer", entry.getKey(),
                            "record", Observations.record(record));
                }
            }
            a.commitSync(Duration.ofMillis(Observations.TIMEOUT_MS));
            b.commitSync(Duration.ofMillis(Observations.TIMEOUT_MS));
            Observations.emit("committed", "by", "a", "offsets",
                    offsets(a.committed(Set.copyOf(all),
                            Duration.ofMillis(Observations.TIMEOUT_MS))));

            b.close(Duration.ofMillis(Observations.TIMEOUT_MS));
            Observations.emit("step", "name", "b closed");
            pollUntil("a owns all again", () -> a.assignment().size() == PARTITIONS, a);
            a.close(Duration.ofMillis(Observations.TIMEOUT_MS));
            Observations.emit("step", "name", "a closed");

            produce(producer, topic, 2, 1);
        }

        try (KafkaConsumer<String, String> c = consumer(bootstrap, group, protocol, "c")) {
            c.subscribe(List.of(topic), new Listener("c"));
            Map<String, List<ConsumerRecord<String, String>>> got = new LinkedHashMap<>();
            got.put("c", new ArrayList<>());
            pollUntil("4 more records", () -> got.get("c").size() >= PARTITIONS,
                    Map.of("c", c), got);
            for (ConsumerRecord<String, String> record : got.get("c")) {
                Observations.emit("consumed", "consumer", "c",
                        "record", Observations.record(record));
            }
            Duration timeout = Duration.ofMillis(Observations.TIMEOUT_MS);
            Observations.emit("offsets", "what", "committed",
                    "offsets", offsets(c.committed(Set.copyOf(all), timeout)));
            Observations.emit("offsets", "what", "beginning",
                    "offsets", Observations.byPartition(c.beginningOffsets(all, timeout)));
            Observations.emit("offsets", "what", "end",
                    "offsets", Observations.byPartition(c.endOffsets(all, timeout)));
            long base = Observations.BASE_TIMESTAMP;
            for (long at : List.of(base + 5_000, base + 1_000_000)) {
                Map<TopicPartition, Long> query = new HashMap<>();
                all.forEach(tp -> query.put(tp, at));
                Map<TopicPartition, OffsetAndTimestamp> found = c.offsetsForTimes(query, timeout);
                Map<TopicPartition, Object> shown = new HashMap<>();
                found.forEach((tp, hit) -> shown.put(tp, hit == null ? null
                        : List.of(hit.offset(), hit.timestamp() - base)));
                Observations.emit("offsets", "what", "for_time",
                        "at", at - base, "offsets", Observations.byPartition(shown));
            }
            c.seek(all.get(0), 1);
            c.seekToBeginning(List.of(all.get(1)));
            c.seekToEnd(List.of(all.get(2)));
            Map<TopicPartition, Long> positions = new HashMap<>();
            all.forEach(tp -> positions.put(tp, c.position(tp, timeout)));
            Observations.emit("offsets", "what", "positions after seeks",
                    "offsets", Observations.byPartition(positions));
            got.get("c").clear();
            pollUntil("5 records after seeks", () -> got.get("c").size() >= 5, Map.of("c", c), got);
            for (ConsumerRecord<String, String> record : got.get("c")) {
                Observations.emit("consumed", "consumer", "c after seeks",
                        "record", Observations.record(record));
            }
            c.commitSync(Map.of(all.get(3), new OffsetAndMetadata(1, "meta-3")), timeout);
            Observations.emit("offsets", "what", "committed with metadata",
                    "offsets", offsets(c.committed(Set.copyOf(all), timeout)));
        }
        if (protocol.equals("classic")) {
            losesItsPartitions(bootstrap, topic, group + "-slow", protocol);
        }
        Observations.emit("done");
    }

    /** Consumer "d" (its own group) lets max.poll.interval.ms pass without polling: it leaves
     * the group, and its next poll reports that its partitions went. */
    private static void losesItsPartitions(String bootstrap, String topic, String group,
            String protocol) throws InterruptedException {
        try (KafkaConsumer<String, String> d = consumer(bootstrap, group, protocol, "d",
                MAX_POLL_INTERVAL_MS)) {
            d.subscribe(List.of(topic), new Listener("d"));
            Map<String, List<ConsumerRecord<String, String>>> got = new LinkedHashMap<>();
            pollUntil("d owns all", () -> d.assignment().size() == PARTITIONS,
                    Map.of("d", d), got);
            int calls = CALLS.get("d");
            Thread.sleep(2L * MAX_POLL_INTERVAL_MS);
            Observations.emit("step", "name", "d slept");
            // the partitions go (lost) and the poll joins again (assigned)
            pollUntil("d owns all again", () -> CALLS.get("d") >= calls + 2
                    && d.assignment().size() == PARTITIONS, Map.of("d", d), got);
        }
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap, String group,
            String protocol, String name) {
        return consumer(bootstrap, group, protocol, name, null);
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap, String group,
            String protocol, String name, Integer maxPollIntervalMs) {
        Properties props = Clients.consumerProps(bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        if (protocol.equals("classic")) {
            // a member learns of a rebalance from its heartbeat: 0.5 s instead of 3 s keeps
            // the run short (with the consumer protocol the broker sets the interval)
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        }
        if (maxPollIntervalMs != null) {
            props.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, maxPollIntervalMs);
        }
        return new KafkaConsumer<>(props);
    }

    /** count records per partition from round `first`: partition p, round r has offset r,
     * key "k<p>-<r>", value "v<p>-<r>", timestamp BASE + (4r + p) s, header "round". */
    private static void produce(KafkaProducer<String, String> producer, String topic, int first,
            int count) throws Exception {
        List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
        for (int round = first; round < first + count; round++) {
            for (int p = 0; p < PARTITIONS; p++) {
                RecordHeaders headers = new RecordHeaders();
                headers.add("round", Integer.toString(round).getBytes(StandardCharsets.UTF_8));
                sent.add(producer.send(new ProducerRecord<>(topic, p,
                        Observations.BASE_TIMESTAMP + (round * PARTITIONS + p) * 1_000L,
                        "k" + p + "-" + round, "v" + p + "-" + round, headers)));
            }
        }
        producer.flush();
        for (java.util.concurrent.Future<?> future : sent) {
            Observations.await(future);
        }
    }

    @SafeVarargs
    private static void pollUntil(String what, BooleanSupplier done,
            KafkaConsumer<String, String>... consumers) {
        Map<String, KafkaConsumer<String, String>> named = new LinkedHashMap<>();
        for (int i = 0; i < consumers.length; i++) {
            named.put(Integer.toString(i), consumers[i]);
        }
        Map<String, List<ConsumerRecord<String, String>>> sink = new HashMap<>();
        pollUntil(what, done, named, sink);
        sink.values().forEach(records -> {
            if (!records.isEmpty()) {
                throw new IllegalStateException(what + ": unexpected records " + records);
            }
        });
    }

    /** Poll every consumer in turn until `done`, adding what each returns to got[name];
     * fails after the timeout. */
    private static void pollUntil(String what, BooleanSupplier done,
            Map<String, KafkaConsumer<String, String>> consumers,
            Map<String, List<ConsumerRecord<String, String>>> got) {
        long deadline = System.currentTimeMillis() + Observations.TIMEOUT_MS;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out waiting for: " + what);
            }
            for (Map.Entry<String, KafkaConsumer<String, String>> entry : consumers.entrySet()) {
                for (ConsumerRecord<String, String> record : entry.getValue().poll(POLL)) {
                    got.computeIfAbsent(entry.getKey(), k -> new ArrayList<>()).add(record);
                }
            }
        }
    }

    private static Map<String, Object> offsets(Map<TopicPartition, OffsetAndMetadata> committed) {
        Map<TopicPartition, Object> shown = new HashMap<>();
        committed.forEach((tp, offset) -> shown.put(tp, offset == null ? null
                : List.of(offset.offset(), offset.metadata())));
        return Observations.byPartition(shown);
    }
}
