package io.mockbroker.jvmstreams;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;

import io.mockbroker.jvmjson.Json;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A stateful Kafka Streams word count with exactly_once_v2 against one cluster: the lines of
 * a text file are produced to PREFIX-text (2 partitions), the application (id PREFIX-wc)
 * splits them into words, re-keys by word (groupBy: the repartition topic PREFIX-wc-words-
 * repartition) and counts them in a store (its changelog PREFIX-wc-counts-changelog), writing
 * each count to PREFIX-counts. A read_committed consumer reads the output until every
 * word's latest count is the count of the text (or the time runs out).
 *
 * <p>Usage: WordCount BOOTSTRAP PREFIX TEXT_FILE STATE_DIR. Prints one JSON line per
 * observation: "state" (RUNNING reached), "counts" (word to last committed count), "closed",
 * "internal topics" (name to partition count), "internal topic configs" (each one's topic
 * config overrides, as Streams created it), "committed input offsets" (the application's
 * group), and on failure "error".
 */
public final class WordCount {
    private static final long DEADLINE_MS = 90_000;

    private WordCount() {
    }

    private static void emit(String step, Object value) {
        Map<String, Object> line = new TreeMap<>();
        line.put("step", step);
        line.put("ok", value);
        System.out.println(Json.write(line));
        System.out.flush();
    }

    static List<String> words(String line) {
        List<String> out = new ArrayList<>();
        for (String word : line.toLowerCase().split("[^a-z0-9']+")) {
            if (!word.isEmpty()) {
                out.add(word);
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        List<String> lines = Files.readAllLines(Path.of(args[2]));
        String stateDir = args[3];
        String input = prefix + "-text";
        String output = prefix + "-counts";
        String appId = prefix + "-wc";
        Map<String, Long> expected = new TreeMap<>();
        lines.forEach(line -> words(line).forEach(word -> expected.merge(word, 1L, Long::sum)));

        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        adminProps.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        adminProps.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(input, 2, (short) 1),
                    new NewTopic(output, 1, (short) 1))).all().get();
            produce(bootstrap, input, lines);
            KafkaStreams streams = new KafkaStreams(topology(input, output),
                    streamsProps(bootstrap, appId, stateDir));
            AtomicReference<Throwable> failure = new AtomicReference<>();
            streams.setUncaughtExceptionHandler(error -> {
                failure.set(error);
                return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                        .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            try {
                streams.start();
                long deadline = System.currentTimeMillis() + DEADLINE_MS;
                while (streams.state() != KafkaStreams.State.RUNNING
                        && System.currentTimeMillis() < deadline && failure.get() == null) {
                    Thread.sleep(50);
                }
                emit("state", streams.state().name());
                emit("counts", readCounts(bootstrap, output, expected, deadline));
            } finally {
                streams.close(Duration.ofSeconds(15));
            }
            emit("closed", streams.state().name());
            if (failure.get() != null) {
                emit("error", failure.get().toString());
            }
            Map<String, Object> internal = new TreeMap<>();
            List<String> names = admin.listTopics().names().get().stream()
                    .filter(name -> name.startsWith(appId + "-")).toList();
            for (TopicDescription description : admin.describeTopics(names).allTopicNames().get()
                    .values()) {
                internal.put(description.name(), description.partitions().size());
            }
            emit("internal topics", internal);
            Map<String, Object> overrides = new TreeMap<>();
            List<ConfigResource> resources = names.stream()
                    .map(name -> new ConfigResource(ConfigResource.Type.TOPIC, name)).toList();
            admin.describeConfigs(resources).all().get().forEach((resource, config) ->
                    overrides.put(resource.name(), config.entries().stream()
                            .filter(entry -> entry.source()
                                    == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG)
                            .map(entry -> entry.name() + "=" + entry.value()).sorted().toList()));
            emit("internal topic configs", overrides);
            Map<String, Object> committed = new TreeMap<>();
            admin.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get()
                    .forEach((partition, offset) -> {
                        if (partition.topic().equals(input)) {
                            committed.put(partition.toString(), offset.offset());
                        }
                    });
            emit("committed input offsets", committed);
            List<String> all = new ArrayList<>(names);
            all.addAll(List.of(input, output));
            admin.deleteTopics(all).all().get();
        }
        System.exit(0);
    }

    private static StreamsBuilder builder(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(WordCount::words)
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(),
                        Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder;
    }

    private static org.apache.kafka.streams.Topology topology(String input, String output) {
        return builder(input, output).build();
    }

    private static Properties streamsProps(String bootstrap, String appId, String stateDir) {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG),
                "earliest");
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG),
                "10000");
        props.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG),
                "10000");
        return props;
    }

    private static void produce(String bootstrap, String topic, List<String> lines)
            throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props,
                new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < lines.size(); i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, "line-" + i, lines.get(i)));
            }
            producer.flush();
        }
    }

    /** Each word's last count in the output, read_committed, until they equal `expected` or
     * the deadline passes. */
    private static Map<String, Long> readCounts(String bootstrap, String topic,
            Map<String, Long> expected, long deadline) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        Map<String, Long> counts = new TreeMap<>();
        try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(props,
                new StringDeserializer(), new LongDeserializer())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            while (!counts.equals(expected) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(200))) {
                    counts.put(record.key(), record.value());
                }
            }
        }
        return counts;
    }
}
