package io.mockbroker.jvmclients;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The Java share consumer (KIP-932) against one cluster: `ShareChecks <bootstrap> <prefix>`.
 *
 * <p>Six records go to a one-partition topic; the share group starts from the earliest
 * offset (group config share.auto.offset.reset, set with IncrementalAlterConfigs on the
 * GROUP resource). A KafkaShareConsumer in explicit acknowledgement mode accepts offsets 0,
 * 1 and 5, releases 2 and 3 and rejects 4, committing the acknowledgements with commitSync;
 * the released records come back with delivery count 2 and are accepted. Observations:
 * every delivered record with its delivery count, and each commitSync's outcome per
 * partition.
 */
public final class ShareChecks {
    private static final int RECORDS = 6;

    private ShareChecks() {
    }

    public static void main(String[] args) throws Exception {
        Observations.quietLogging();
        String bootstrap = args[0];
        String topic = args[1] + "-share";
        String group = args[1] + "-share-group";
        Clients.createTopics(bootstrap, Map.of(topic, 1));
        try (Admin admin = Clients.admin(bootstrap)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            Collection<AlterConfigOp> ops = List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"),
                    AlterConfigOp.OpType.SET));
            Observations.await(admin.incrementalAlterConfigs(Map.of(resource, ops)).all());
        }
        try (KafkaProducer<String, String> producer = Clients.producer(bootstrap)) {
            for (int i = 0; i < RECORDS; i++) {
                RecordHeaders headers = new RecordHeaders();
                headers.add("i", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                producer.send(new ProducerRecord<>(topic, 0, Observations.BASE_TIMESTAMP + i,
                        "k" + i, "s" + i, headers));
            }
            producer.flush();
        }
        Properties props = Clients.consumerProps(bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "share-a");
        props.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            consume(consumer, 1, RECORDS, ShareChecks::firstVerdict);
            consume(consumer, 2, 2, offset -> AcknowledgeType.ACCEPT);
            List<Object> late = new ArrayList<>();
            for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                late.add(record.offset());
                consumer.acknowledge(record, AcknowledgeType.ACCEPT);
            }
            Observations.emit("after", "delivered", late);
            consumer.close(Duration.ofMillis(Observations.TIMEOUT_MS));
        }
        Observations.emit("done");
    }

    private static AcknowledgeType firstVerdict(long offset) {
        if (offset == 2 || offset == 3) {
            return AcknowledgeType.RELEASE;
        }
        return offset == 4 ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
    }

    /** Poll until `expected` records arrived, acknowledging each as `verdict` says and
     * committing the acknowledgements after every poll that returned records. */
    private static void consume(KafkaShareConsumer<String, String> consumer, int round,
            int expected, java.util.function.LongFunction<AcknowledgeType> verdict) {
        int got = 0;
        long deadline = System.currentTimeMillis() + Observations.TIMEOUT_MS;
        while (got < expected) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("round " + round + ": only " + got + " records");
            }
            boolean any = false;
            for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                AcknowledgeType type = verdict.apply(record.offset());
                Observations.emit("delivered", "round", round,
                        "record", Observations.record(record),
                        "delivery_count", record.deliveryCount().map(Short::intValue).orElse(-1),
                        "ack", type.toString());
                consumer.acknowledge(record, type);
                got++;
                any = true;
            }
            if (any) {
                Map<TopicIdPartition, Optional<KafkaException>> result =
                        consumer.commitSync(Duration.ofMillis(Observations.TIMEOUT_MS));
                List<Object> outcomes = new ArrayList<>();
                result.forEach((tp, error) -> outcomes.add(List.of(tp.partition(),
                        error.map(e -> e.getClass().getSimpleName()).orElse("ok"))));
                Observations.emit("commit", "round", round, "outcomes", outcomes);
            }
        }
    }
}
