package io.mockbroker.jvmadmin;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;

/** Topics, partitions, configs, records, log dirs, leader elections and reassignments. */
final class AdminSteps {
    /** Records are timestamped from a recent whole second (old ones would fall to
     * retention); timestamps are printed relative to it. */
    static final long BASE_TIMESTAMP = System.currentTimeMillis() / 1000 * 1000 - 60_000L;
    static final List<String> TOPIC_CONFIGS = List.of("retention.ms", "cleanup.policy",
            "segment.bytes", "min.insync.replicas", "max.message.bytes", "compression.type");
    static final List<String> BROKER_CONFIGS = List.of("log.cleaner.backoff.ms",
            "auto.create.topics.enable", "log.retention.ms", "message.max.bytes",
            "compression.type", "log.retention.hours");

    private final AdminProbe probe;
    private final Admin admin;

    AdminSteps(AdminProbe probe) {
        this.probe = probe;
        this.admin = probe.admin;
    }

    void run() throws Exception {
        cluster();
        fencedBrokers();
        topics();
        configs();
        records();
        elections();
    }

    private void cluster() {
        AdminProbe.step("describeCluster", () -> {
            DescribeClusterResult result = admin.describeCluster(
                    new DescribeClusterOptions().includeAuthorizedOperations(true));
            List<org.apache.kafka.common.Node> nodes = new ArrayList<>(result.nodes().get());
            probe.selfId = nodes.get(0).id();
            return AdminProbe.mapOf("nodes", nodes.size(),
                    "controller", probe.node(result.controller().get()),
                    "clusterIdLength", result.clusterId().get().length(),
                    "authorizedOperations", AdminProbe.sortedNames(
                            result.authorizedOperations().get()));
        });
    }

    private void fencedBrokers() {
        AdminProbe.step("describeCluster.includeFencedBrokers", () -> {
            var nodes = admin.describeCluster(new DescribeClusterOptions()
                    .includeFencedBrokers(true)).nodes().get();
            return nodes.stream().map(node -> probe.node(node) + (node.isFenced() ? " fenced"
                    : " unfenced")).sorted().toList();
        });
    }

    private void topics() {
        String a = probe.topic("a");
        String b = probe.topic("b");
        Map<String, Uuid> ids = new TreeMap<>();
        AdminProbe.step("createTopics", () -> {
            CreateTopicsResult result = admin.createTopics(List.of(
                    new NewTopic(a, 3, (short) 1).configs(Map.of("retention.ms", "3600000")),
                    new NewTopic(b, 1, (short) 1)));
            result.all().get();
            Map<String, Object> out = new TreeMap<>();
            for (String name : List.of(a, b)) {
                ids.put(name, result.topicId(name).get());
                out.put(name, AdminProbe.mapOf("partitions", result.numPartitions(name).get(),
                        "replicationFactor", result.replicationFactor(name).get(),
                        "configs", AdminProbe.entries(result.config(name).get(),
                                List.of("retention.ms", "cleanup.policy")),
                        "topicIdSet", !Uuid.ZERO_UUID.equals(ids.get(name))));
            }
            return out;
        });
        AdminProbe.step("createTopics.existing", () ->
                admin.createTopics(List.of(new NewTopic(a, 1, (short) 1))).all().get());
        AdminProbe.step("createTopics.replicationFactorTooLarge", () -> admin.createTopics(
                List.of(new NewTopic(probe.topic("rf"), 1, (short) 3))).all().get());
        AdminProbe.step("createTopics.validateOnly", () -> {
            CreateTopicsResult result = admin.createTopics(
                    List.of(new NewTopic(probe.topic("dry"), 2, (short) 1)),
                    new CreateTopicsOptions().validateOnly(true));
            result.all().get();
            return result.numPartitions(probe.topic("dry")).get();
        });
        AdminProbe.step("createTopics.invalidConfig", () -> admin.createTopics(List.of(
                new NewTopic(probe.topic("bad"), 1, (short) 1)
                        .configs(Map.of("cleanup.policy", "sometimes")))).all().get());
        AdminProbe.step("listTopics", () ->
                AdminProbe.names(admin.listTopics().names().get(), probe.prefix));
        AdminProbe.step("describeTopics.byName", () -> {
            @SuppressWarnings("unchecked")
            Map<String, TopicDescription> found = (Map<String, TopicDescription>)
                    AdminProbe.until(() -> admin.describeTopics(List.of(a, b),
                            new DescribeTopicsOptions().includeAuthorizedOperations(true))
                            .allTopicNames().get(), described -> true);
            Map<String, Object> out = new TreeMap<>();
            for (TopicDescription description : found.values()) {
                Map<String, Object> one = probe.describeTopic(description);
                one.put("topicIdSameAsCreated",
                        description.topicId().equals(ids.get(description.name())));
                out.put(description.name(), one);
            }
            return out;
        });
        AdminProbe.step("describeTopics.byId", () -> {
            Map<Uuid, TopicDescription> found = admin.describeTopics(
                    TopicCollection.ofTopicIds(List.of(ids.get(a)))).allTopicIds().get();
            return found.get(ids.get(a)).name();
        });
        AdminProbe.step("describeTopics.unknownName", () ->
                admin.describeTopics(List.of(probe.topic("missing"))).allTopicNames().get());
        AdminProbe.step("describeTopics.unknownId", () -> admin.describeTopics(
                TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).allTopicIds().get());
        AdminProbe.step("createPartitions", () -> {
            admin.createPartitions(Map.of(a, NewPartitions.increaseTo(5))).all().get();
            return AdminProbe.until(() -> admin.describeTopics(List.of(a)).allTopicNames()
                    .get().get(a).partitions().size(), count -> count.equals(5));
        });
        AdminProbe.step("createPartitions.decrease", () ->
                admin.createPartitions(Map.of(a, NewPartitions.increaseTo(2))).all().get());
        AdminProbe.step("createPartitions.unknownTopic", () -> admin.createPartitions(
                Map.of(probe.topic("missing"), NewPartitions.increaseTo(2))).all().get());
    }

    private void configs() {
        ConfigResource topicResource = new ConfigResource(ConfigResource.Type.TOPIC,
                probe.topic("a"));
        AdminProbe.step("describeConfigs.topic", () ->
                AdminProbe.entries(probe.describeConfig(topicResource, true), TOPIC_CONFIGS));
        AdminProbe.step("incrementalAlterConfigs.topic", () -> {
            admin.incrementalAlterConfigs(Map.of(topicResource, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"),
                            AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"),
                            AlterConfigOp.OpType.APPEND),
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", "65536"),
                            AlterConfigOp.OpType.SET)))).all().get();
            return AdminProbe.entries(probe.describeConfigUntil(topicResource,
                    "max.message.bytes", "65536", false), TOPIC_CONFIGS);
        });
        AdminProbe.step("incrementalAlterConfigs.topicDelete", () -> {
            admin.incrementalAlterConfigs(Map.of(topicResource, List.of(
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", ""),
                            AlterConfigOp.OpType.DELETE),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"),
                            AlterConfigOp.OpType.SUBTRACT)))).all().get();
            return AdminProbe.entries(probe.describeConfigUntil(topicResource,
                    "cleanup.policy", "compact", false), TOPIC_CONFIGS);
        });
        AdminProbe.step("incrementalAlterConfigs.unknownConfig", () ->
                admin.incrementalAlterConfigs(Map.of(topicResource, List.of(new AlterConfigOp(
                        new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET))))
                        .all().get());
        AdminProbe.step("incrementalAlterConfigs.invalidValue", () ->
                admin.incrementalAlterConfigs(Map.of(topicResource, List.of(new AlterConfigOp(
                        new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET))))
                        .all().get());
        AdminProbe.step("describeConfigs.unknownTopic", () -> probe.describeConfig(
                new ConfigResource(ConfigResource.Type.TOPIC, probe.topic("missing")), false));
        ConfigResource brokerResource = new ConfigResource(ConfigResource.Type.BROKER,
                String.valueOf(probe.selfId));
        AdminProbe.step("describeConfigs.broker", () ->
                AdminProbe.entries(probe.describeConfig(brokerResource, false), BROKER_CONFIGS));
        AdminProbe.step("incrementalAlterConfigs.broker", () -> {
            admin.incrementalAlterConfigs(Map.of(brokerResource, List.of(new AlterConfigOp(
                    new ConfigEntry("log.cleaner.backoff.ms", "16000"),
                    AlterConfigOp.OpType.SET)))).all().get();
            Map<String, Object> altered = AdminProbe.entries(probe.describeConfigUntil(
                    brokerResource, "log.cleaner.backoff.ms", "16000", true),
                    List.of("log.cleaner.backoff.ms"));
            admin.incrementalAlterConfigs(Map.of(brokerResource, List.of(new AlterConfigOp(
                    new ConfigEntry("log.cleaner.backoff.ms", ""),
                    AlterConfigOp.OpType.DELETE)))).all().get();
            return AdminProbe.mapOf("altered", altered, "restored", AdminProbe.entries(
                    probe.describeConfigUntil(brokerResource, "log.cleaner.backoff.ms", "15000",
                            false),
                    List.of("log.cleaner.backoff.ms")));
        });
        AdminProbe.step("incrementalAlterConfigs.brokerReadOnly", () ->
                admin.incrementalAlterConfigs(Map.of(brokerResource, List.of(new AlterConfigOp(
                        new ConfigEntry("broker.id", "7"), AlterConfigOp.OpType.SET))))
                        .all().get());
    }

    private void records() {
        String b = probe.topic("b");
        TopicPartition partition = new TopicPartition(b, 0);
        AdminProbe.step("produce", () -> {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, probe.bootstrap);
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
            props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
            props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
            List<Long> offsets = new ArrayList<>();
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(props,
                    new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < 10; i++) {
                    offsets.add(producer.send(new ProducerRecord<>(b, 0,
                            BASE_TIMESTAMP + 1000L * i, "k" + i, "v" + i)).get().offset());
                }
            }
            return offsets;
        });
        logDirs();
        AdminProbe.step("listOffsets", () -> {
            Map<String, Object> out = new TreeMap<>();
            Map<String, OffsetSpec> specs = Map.of("earliest", OffsetSpec.earliest(),
                    "latest", OffsetSpec.latest(), "maxTimestamp", OffsetSpec.maxTimestamp(),
                    "forTimestamp", OffsetSpec.forTimestamp(BASE_TIMESTAMP + 4500L),
                    "afterLast", OffsetSpec.forTimestamp(BASE_TIMESTAMP + 60_000L),
                    "earliestLocal", OffsetSpec.earliestLocal(),
                    "latestTiered", OffsetSpec.latestTiered());
            for (Map.Entry<String, OffsetSpec> spec : specs.entrySet()) {
                out.put(spec.getKey(), AdminProbe.offsetInfo(admin.listOffsets(
                        Map.of(partition, spec.getValue())).partitionResult(partition).get()));
            }
            return out;
        });
        AdminProbe.step("deleteRecords", () -> {
            long low = admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(4)))
                    .lowWatermarks().get(partition).get().lowWatermark();
            return AdminProbe.mapOf("lowWatermark", low, "earliest", admin.listOffsets(
                    Map.of(partition, OffsetSpec.earliest())).partitionResult(partition).get()
                    .offset());
        });
        AdminProbe.step("describeLogDirs.afterDeleteRecords", () -> {
            Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(probe.selfId))
                    .allDescriptions().get().get(probe.selfId);
            List<Long> sizes = new ArrayList<>();
            dirs.values().forEach(description -> {
                ReplicaInfo info = description.replicaInfos().get(partition);
                if (info != null) {
                    sizes.add(info.size());
                }
            });
            return sizes;
        });
        AdminProbe.step("deleteRecords.beyondEnd", () -> admin.deleteRecords(
                Map.of(partition, RecordsToDelete.beforeOffset(99))).all().get());
    }

    private void logDirs() {
        TopicPartition partition = new TopicPartition(probe.topic("b"), 0);
        String[] dir = new String[1];
        AdminProbe.step("describeLogDirs", () -> {
            Map<Integer, Map<String, LogDirDescription>> all = admin.describeLogDirs(
                    List.of(probe.selfId)).allDescriptions().get();
            Map<String, LogDirDescription> dirs = all.get(probe.selfId);
            Map<String, Object> out = new TreeMap<>();
            out.put("brokers", all.keySet().stream().map(probe::nodeId).toList());
            out.put("dirs", dirs.size());
            for (Map.Entry<String, LogDirDescription> entry : dirs.entrySet()) {
                dir[0] = entry.getKey();
                LogDirDescription description = entry.getValue();
                ReplicaInfo info = description.replicaInfos().get(partition);
                out.put("error", description.error() == null ? null
                        : description.error().getClass().getSimpleName());
                out.put("replica", info == null ? null : AdminProbe.mapOf("size", info.size(),
                        "offsetLag", info.offsetLag(), "future", info.isFuture()));
                out.put("totalBytesKnown", description.totalBytes().isPresent());
                out.put("usableBytesKnown", description.usableBytes().isPresent());
            }
            return out;
        });
        TopicPartitionReplica replica = new TopicPartitionReplica(partition.topic(), 0,
                probe.selfId);
        AdminProbe.step("describeReplicaLogDirs", () -> {
            var info = admin.describeReplicaLogDirs(List.of(replica)).all().get().get(replica);
            return AdminProbe.mapOf("currentIsTheLogDir",
                    dir[0] != null && dir[0].equals(info.getCurrentReplicaLogDir()),
                    "currentLag", info.getCurrentReplicaOffsetLag(),
                    "future", info.getFutureReplicaLogDir(),
                    "futureLag", info.getFutureReplicaOffsetLag());
        });
        AdminProbe.step("alterReplicaLogDirs.sameDir", () ->
                admin.alterReplicaLogDirs(Map.of(replica, dir[0])).all().get());
        AdminProbe.step("alterReplicaLogDirs.unknownDir", () ->
                admin.alterReplicaLogDirs(Map.of(replica, "/nonexistent/dir")).all().get());
    }

    private void elections() {
        String a = probe.topic("a");
        for (ElectionType type : List.of(ElectionType.PREFERRED, ElectionType.UNCLEAN)) {
            AdminProbe.step("electLeaders." + type.name().toLowerCase(), () -> {
                Map<TopicPartition, Optional<Throwable>> result = admin.electLeaders(type,
                        Set.of(new TopicPartition(a, 0), new TopicPartition(a, 1),
                                new TopicPartition(probe.topic("missing"), 0)))
                        .partitions().get();
                Map<String, Object> out = new TreeMap<>();
                result.forEach((tp, error) -> out.put(tp.toString(),
                        error.map(AdminProbe::errorName).orElse("elected")));
                return out;
            });
        }
        TopicPartition partition = new TopicPartition(a, 0);
        AdminProbe.step("alterPartitionReassignments.sameReplicas", () -> {
            admin.alterPartitionReassignments(Map.of(partition, Optional.of(
                    new NewPartitionReassignment(List.of(probe.selfId))))).all().get();
            return "done";
        });
        AdminProbe.step("listPartitionReassignments", () -> {
            Map<TopicPartition, PartitionReassignment> found =
                    admin.listPartitionReassignments().reassignments().get();
            return found.keySet().stream().filter(tp -> tp.topic().startsWith(probe.prefix))
                    .map(TopicPartition::toString).sorted().toList();
        });
        AdminProbe.step("alterPartitionReassignments.unknownBroker", () ->
                admin.alterPartitionReassignments(Map.of(partition, Optional.of(
                        new NewPartitionReassignment(List.of(probe.selfId + 90))))).all().get());
        AdminProbe.step("alterPartitionReassignments.cancelNone", () ->
                admin.alterPartitionReassignments(Map.of(partition, AdminProbe.none()))
                        .all().get());
    }

    void cleanUp() {
        AdminProbe.step("deleteTopics.byName", () -> {
            admin.deleteTopics(List.of(probe.topic("a"))).all().get();
            return "done";
        });
        AdminProbe.step("deleteTopics.byId", () -> {
            String b = probe.topic("b");
            Uuid id = admin.describeTopics(List.of(b)).allTopicNames().get().get(b).topicId();
            admin.deleteTopics(TopicCollection.ofTopicIds(List.of(id))).all().get();
            return "done";
        });
        AdminProbe.step("deleteTopics.unknownName", () ->
                admin.deleteTopics(List.of(probe.topic("missing"))).all().get());
        AdminProbe.step("deleteTopics.unknownId", () -> admin.deleteTopics(
                TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).all().get());
        AdminProbe.step("listTopics.afterDelete", () -> {
            long deadline = System.currentTimeMillis() + 10_000;
            Set<String> left = AdminProbe.names(admin.listTopics().names().get(), probe.prefix);
            while (!left.isEmpty() && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
                left = AdminProbe.names(admin.listTopics().names().get(), probe.prefix);
            }
            return left;
        });
    }
}
