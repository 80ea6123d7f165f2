package io.mockbroker.jvmclients;

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The Java producer against one cluster: `ProducerChecks <bootstrap> <topic-prefix>`.
 *
 * <p>An idempotent producer (the default) writes keyed records with headers and timestamps
 * (partitions chosen by the default partitioner) and unkeyed ones to an explicit partition;
 * each acknowledgement (partition, offset) is an observation, then the broker's producer
 * state per partition (DescribeProducers: last sequence, epoch) and the records read back.
 *
 * <p>A transactional producer commits, aborts and commits again. Observations: whether the
 * client negotiated transactions v2 (KIP-890 part 2: its TransactionManager's flag), the
 * client's and the coordinator's producer epoch after each transaction (DescribeTransactions;
 * with v2 every EndTxn bumps the epoch), the acknowledged offsets, and the records read back
 * with read_committed and read_uncommitted (offsets show the control records). Each
 * transaction also commits a consumer group offset (sendOffsetsToTransaction); the group's
 * offsets afterwards show only the committed transactions'.
 */
public final class ProducerChecks {

    private ProducerChecks() {
    }

    public static void main(String[] args) throws Exception {
        Observations.quietLogging();
        String bootstrap = args[0];
        String prefix = args[1];
        String plainTopic = prefix + "-idem";
        String txnTopic = prefix + "-txn";
        Map<String, Integer> topics = new LinkedHashMap<>();
        topics.put(plainTopic, 3);
        topics.put(txnTopic, 2);
        Clients.createTopics(bootstrap, topics);
        idempotent(bootstrap, plainTopic);
        transactional(bootstrap, txnTopic, prefix + "-tx", prefix + "-txn-group");
        Observations.emit("done");
    }

    private static void idempotent(String bootstrap, String topic) throws Exception {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        List<String> values = new ArrayList<>();
        try (KafkaProducer<String, String> producer = Clients.producer(bootstrap)) {
            for (int i = 0; i < 6; i++) {
                RecordHeaders headers = new RecordHeaders();
                headers.add("n", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                headers.add("empty", null);
                sent.add(producer.send(new ProducerRecord<>(topic, null,
                        Observations.BASE_TIMESTAMP + i, "key-" + i, "value-" + i, headers)));
                values.add("value-" + i);
            }
            for (int i = 6; i < 9; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, 2,
                        Observations.BASE_TIMESTAMP + i, null, "value-" + i)));
                values.add("value-" + i);
            }
            producer.flush();
            for (int i = 0; i < sent.size(); i++) {
                RecordMetadata meta = Observations.await(sent.get(i));
                Observations.emit("acked", "v", values.get(i), "p", meta.partition(),
                        "o", meta.offset(), "ts", meta.timestamp() - Observations.BASE_TIMESTAMP);
            }
        }
        List<TopicPartition> partitions = List.of(new TopicPartition(topic, 0),
                new TopicPartition(topic, 1), new TopicPartition(topic, 2));
        try (Admin admin = Clients.admin(bootstrap)) {
            DescribeProducersResult result = admin.describeProducers(partitions);
            for (TopicPartition tp : partitions) {
                List<ProducerState> states = Observations.await(result.partitionResult(tp))
                        .activeProducers();
                List<Object> described = new ArrayList<>();
                for (ProducerState state : states) {
                    described.add(Map.of("id_set", state.producerId() >= 0,
                            "epoch", state.producerEpoch(), "last_sequence", state.lastSequence(),
                            "in_txn", state.currentTransactionStartOffset().isPresent()));
                }
                Observations.emit("producer_state", "p", tp.partition(), "producers", described);
            }
        }
        for (ConsumerRecord<String, String> record
                : Clients.readToEnd(bootstrap, partitions, "read_uncommitted")) {
            Observations.emit("read", "topic", "idem", "record", Observations.record(record));
        }
    }

    private static void transactional(String bootstrap, String topic, String transactionalId,
            String group) throws Exception {
        Properties props = Clients.producerProps(bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 30_000);
        String[][] transactions = {{"0:a", "1:b", "0:c"}, {"0:d", "1:e"}, {"1:f"}};
        boolean[] commit = {true, false, true};
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props);
             Admin admin = Clients.admin(bootstrap)) {
            producer.initTransactions();
            Observations.emit("txn_init", "tv2", transactionV2(producer),
                    "client_epoch", clientEpoch(producer),
                    "coordinator", describe(admin, transactionalId));
            for (int t = 0; t < transactions.length; t++) {
                producer.beginTransaction();
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                for (String spec : transactions[t]) {
                    int partition = Integer.parseInt(spec.substring(0, 1));
                    sent.add(producer.send(new ProducerRecord<>(topic, partition,
                            Observations.BASE_TIMESTAMP + 10L * t + sent.size(), "t" + t,
                            spec.substring(2))));
                }
                // the group's offset for partition 0 of the topic becomes 10 + t if this one
                // commits (v2: TxnOffsetCommit v5 without AddOffsetsToTxn)
                producer.sendOffsetsToTransaction(
                        Map.of(new TopicPartition(topic, 0),
                                new OffsetAndMetadata(10 + t, "t" + t)),
                        new ConsumerGroupMetadata(group));
                producer.flush();
                for (int i = 0; i < sent.size(); i++) {
                    RecordMetadata meta = Observations.await(sent.get(i));
                    Observations.emit("txn_acked", "txn", t, "v", transactions[t][i].substring(2),
                            "p", meta.partition(), "o", meta.offset());
                }
                if (commit[t]) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
                Observations.emit("txn_end", "txn", t, "commit", commit[t],
                        "tv2", transactionV2(producer), "client_epoch", clientEpoch(producer),
                        "coordinator", describe(admin, transactionalId));
            }
        }
        try (Admin admin = Clients.admin(bootstrap)) {
            Map<TopicPartition, OffsetAndMetadata> offsets = Observations.await(
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            Map<TopicPartition, Object> shown = new LinkedHashMap<>();
            offsets.forEach((tp, offset) ->
                    shown.put(tp, List.of(offset.offset(), offset.metadata())));
            Observations.emit("txn_group_offsets", "offsets", Observations.byPartition(shown));
        }
        List<TopicPartition> partitions = List.of(new TopicPartition(topic, 0),
                new TopicPartition(topic, 1));
        for (String isolation : List.of("read_committed", "read_uncommitted")) {
            for (ConsumerRecord<String, String> record
                    : Clients.readToEnd(bootstrap, partitions, isolation)) {
                Observations.emit("read", "topic", "txn", "isolation", isolation,
                        "record", Observations.record(record));
            }
        }
    }

    /** The coordinator's view once the transaction has left the Prepare* states (markers
     * written): state, producer epoch and the partitions still in the transaction. */
    private static Map<String, Object> describe(Admin admin, String transactionalId)
            throws Exception {
        long deadline = System.currentTimeMillis() + Observations.TIMEOUT_MS;
        while (true) {
            TransactionDescription description = Observations.await(
                    admin.describeTransactions(List.of(transactionalId))
                            .description(transactionalId));
            TransactionState state = description.state();
            boolean settled = state != TransactionState.PREPARE_COMMIT
                    && state != TransactionState.PREPARE_ABORT;
            if (settled || System.currentTimeMillis() > deadline) {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("state", state.toString());
                out.put("epoch", description.producerEpoch());
                out.put("partitions", description.topicPartitions().size());
                return out;
            }
            Thread.sleep(50);
        }
    }

    private static Object transactionManager(KafkaProducer<?, ?> producer) throws Exception {
        Field field = KafkaProducer.class.getDeclaredField("transactionManager");
        field.setAccessible(true);
        return field.get(producer);
    }

    /** The client's own record of the negotiation: TransactionManager.isTransactionV2Enabled(),
     * set from the finalized transaction.version feature the broker advertised. */
    private static boolean transactionV2(KafkaProducer<?, ?> producer) throws Exception {
        Object manager = transactionManager(producer);
        return (Boolean) manager.getClass().getMethod("isTransactionV2Enabled").invoke(manager);
    }

    private static int clientEpoch(KafkaProducer<?, ?> producer) throws Exception {
        Object manager = transactionManager(producer);
        Field field = manager.getClass().getDeclaredField("producerIdAndEpoch");
        field.setAccessible(true);
        Object idAndEpoch = field.get(manager);
        return idAndEpoch.getClass().getField("epoch").getShort(idAndEpoch);
    }
}
