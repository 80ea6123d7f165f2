package io.mockbroker.jvmadmin;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** Groups and their offsets, transactions and producers, features, the quorum, and the
 * calls mockbroker does not serve. */
final class AdminGroupSteps {
    private final AdminProbe probe;
    private final Admin admin;

    AdminGroupSteps(AdminProbe probe) {
        this.probe = probe;
        this.admin = probe.admin;
    }

    void run() throws Exception {
        groups();
        transactions();
        features();
        unserved();
    }

    private Map<String, Object> describeGroup(String group) throws Exception {
        ConsumerGroupDescription description = admin.describeConsumerGroups(List.of(group),
                new DescribeConsumerGroupsOptions().includeAuthorizedOperations(true))
                .describedGroups().get(group).get();
        List<Object> members = new ArrayList<>();
        for (MemberDescription member : description.members()) {
            members.add(AdminProbe.mapOf("instance", member.groupInstanceId().orElse(null),
                    "clientId", member.clientId(), "host", member.host(),
                    "memberIdPrefixed", member.consumerId().startsWith(member.clientId()),
                    "assignment", member.assignment().topicPartitions().stream()
                            .map(TopicPartition::toString).sorted().toList()));
        }
        return AdminProbe.mapOf("state", description.groupState().name(),
                "type", description.type().name(), "simple", description.isSimpleConsumerGroup(),
                "assignor", description.partitionAssignor(), "members", members,
                "coordinator", probe.node(description.coordinator()),
                "authorizedOperations", AdminProbe.sortedNames(description.authorizedOperations()));
    }

    private List<Object> listed(Collection<GroupListing> listings) {
        List<Object> out = new ArrayList<>();
        for (GroupListing listing : listings) {
            if (listing.groupId().startsWith(probe.prefix)) {
                out.add(AdminProbe.mapOf("group", listing.groupId(),
                        "type", listing.type().map(Enum::name).orElse(null),
                        "protocol", listing.protocol(),
                        "state", listing.groupState().map(Enum::name).orElse(null)));
            }
        }
        out.sort((x, y) -> x.toString().compareTo(y.toString()));
        return out;
    }

    private Map<String, Object> committed(String group) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(
                Map.of(group, new ListConsumerGroupOffsetsSpec())).partitionsToOffsetAndMetadata(
                group).get();
        Map<String, Object> out = new TreeMap<>();
        offsets.forEach((tp, offset) -> out.put(tp.toString(), offset == null ? null
                : List.of(offset.offset(), offset.metadata())));
        return out;
    }

    private void groups() throws Exception {
        String topic = probe.topic("g");
        String group = probe.topic("group");
        admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, probe.bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, probe.prefix + "-instance");
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, probe.prefix + "-consumer");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "45000");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props,
                new StringDeserializer(), new StringDeserializer());
        try {
            AdminProbe.step("consumer.join", () -> {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 30_000;
                while (consumer.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
                    consumer.poll(Duration.ofMillis(200));
                }
                consumer.commitSync(Map.of(new TopicPartition(topic, 0),
                        new OffsetAndMetadata(3, "m0"), new TopicPartition(topic, 1),
                        new OffsetAndMetadata(0, "")));
                return consumer.assignment().stream().map(TopicPartition::toString).sorted()
                        .toList();
            });
            AdminProbe.step("describeConsumerGroups.stable", () -> describeGroup(group));
            AdminProbe.step("describeClassicGroups", () -> {
                var description = admin.describeClassicGroups(List.of(group)).all().get()
                        .get(group);
                return AdminProbe.mapOf("state", description.state().name(),
                        "protocolType", description.protocol(),
                        "members", description.members().size());
            });
            AdminProbe.step("listGroups", () -> listed(admin.listGroups().all().get()));
            AdminProbe.step("listGroups.consumerStable", () -> listed(admin.listGroups(
                    ListGroupsOptions.forConsumerGroups().inGroupStates(
                            Set.of(org.apache.kafka.common.GroupState.STABLE))).all().get()));
            AdminProbe.step("listConsumerGroups", () -> {
                @SuppressWarnings("deprecation")
                var listings = admin.listConsumerGroups().all().get();
                List<String> out = new ArrayList<>();
                listings.forEach(listing -> {
                    if (listing.groupId().startsWith(probe.prefix)) {
                        out.add(listing.groupId() + " " + listing.groupState().orElse(null)
                                + " " + listing.type().orElse(null));
                    }
                });
                return out;
            });
            AdminProbe.step("listConsumerGroupOffsets", () -> committed(group));
            AdminProbe.step("alterConsumerGroupOffsets.activeGroup", () ->
                    admin.alterConsumerGroupOffsets(group, Map.of(new TopicPartition(topic, 0),
                            new OffsetAndMetadata(1))).all().get());
            AdminProbe.step("deleteConsumerGroups.notEmpty", () ->
                    admin.deleteConsumerGroups(List.of(group)).all().get());
            AdminProbe.step("deleteConsumerGroupOffsets.subscribed", () ->
                    admin.deleteConsumerGroupOffsets(group, Set.of(new TopicPartition(topic, 0)))
                            .all().get());
        } finally {
            consumer.close(Duration.ofSeconds(5));
        }
        AdminProbe.step("removeMembersFromConsumerGroup.unknown", () ->
                admin.removeMembersFromConsumerGroup(group, new RemoveMembersFromConsumerGroupOptions(
                        List.of(new MemberToRemove(probe.prefix + "-stranger")))).all().get());
        AdminProbe.step("removeMembersFromConsumerGroup", () -> {
            admin.removeMembersFromConsumerGroup(group, new RemoveMembersFromConsumerGroupOptions(
                    List.of(new MemberToRemove(probe.prefix + "-instance")))).all().get();
            return describeGroup(group);
        });
        AdminProbe.step("alterConsumerGroupOffsets", () -> {
            admin.alterConsumerGroupOffsets(group, Map.of(new TopicPartition(topic, 0),
                    new OffsetAndMetadata(1, "moved"))).all().get();
            return committed(group);
        });
        AdminProbe.step("deleteConsumerGroupOffsets", () -> {
            admin.deleteConsumerGroupOffsets(group, Set.of(new TopicPartition(topic, 1)))
                    .all().get();
            return committed(group);
        });
        AdminProbe.step("deleteConsumerGroups", () -> {
            admin.deleteConsumerGroups(List.of(group)).all().get();
            return listed(admin.listGroups().all().get());
        });
        AdminProbe.step("deleteConsumerGroups.unknown", () ->
                admin.deleteConsumerGroups(List.of(probe.topic("nogroup"))).all().get());
        AdminProbe.step("describeConsumerGroups.unknown", () -> describeGroup(
                probe.topic("nogroup")));
        consumerProtocolGroup(topic);
        admin.deleteTopics(List.of(topic)).all().get();
    }

    private Map<String, Object> describeNewGroup(String group) throws Exception {
        ConsumerGroupDescription description = admin.describeConsumerGroups(List.of(group))
                .describedGroups().get(group).get();
        List<Object> members = new ArrayList<>();
        for (MemberDescription member : description.members()) {
            members.add(AdminProbe.mapOf("clientId", member.clientId(),
                    "memberEpoch", member.memberEpoch().orElse(null),
                    "upgraded", member.upgraded().orElse(null),
                    "assignment", member.assignment().topicPartitions().stream()
                            .map(TopicPartition::toString).sorted().toList(),
                    "target", member.targetAssignment().map(target -> target.topicPartitions()
                            .stream().map(TopicPartition::toString).sorted().toList())
                            .orElse(null)));
        }
        return AdminProbe.mapOf("state", description.groupState().name(),
                "type", description.type().name(), "assignor", description.partitionAssignor(),
                "groupEpoch", description.groupEpoch().orElse(null),
                "targetAssignmentEpoch", description.targetAssignmentEpoch().orElse(null),
                "members", members);
    }

    /** A KIP-848 group (group.protocol=consumer): ConsumerGroupDescribe behind the admin. */
    private void consumerProtocolGroup(String topic) throws Exception {
        String group = probe.topic("cgroup");
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, probe.bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, probe.prefix + "-kip848");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props,
                new StringDeserializer(), new StringDeserializer());
        try {
            AdminProbe.step("consumerProtocol.join", () -> {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 30_000;
                while (consumer.assignment().size() < 2 && System.currentTimeMillis() < deadline) {
                    consumer.poll(Duration.ofMillis(100));
                }
                consumer.commitSync(Map.of(new TopicPartition(topic, 1),
                        new OffsetAndMetadata(0, "kip848")));
                return consumer.assignment().stream().map(TopicPartition::toString).sorted()
                        .toList();
            });
            AdminProbe.step("describeConsumerGroups.consumerProtocol", () ->
                    describeNewGroup(group));
            AdminProbe.step("listGroups.consumerProtocol", () -> listed(admin.listGroups(
                    new ListGroupsOptions().withTypes(Set.of(
                            org.apache.kafka.common.GroupType.CONSUMER))).all().get()));
        } finally {
            consumer.close(Duration.ofSeconds(5));
        }
        AdminProbe.step("describeConsumerGroups.consumerProtocolLeft", () -> AdminProbe.until(
                () -> describeNewGroup(group),
                found -> "EMPTY".equals(((Map<?, ?>) found).get("state"))));
        AdminProbe.step("deleteConsumerGroups.consumerProtocol", () -> {
            admin.deleteConsumerGroups(List.of(group)).all().get();
            return listed(admin.listGroups().all().get());
        });
    }

    private Map<String, Object> transaction(TransactionDescription description, long producerId) {
        return AdminProbe.mapOf("state", description.state().name(),
                "coordinator", probe.nodeId(description.coordinatorId()),
                "producerIdSame", description.producerId() == producerId,
                "epoch", description.producerEpoch(),
                "timeoutMs", description.transactionTimeoutMs(),
                "startTimeKnown", description.transactionStartTimeMs().isPresent(),
                "partitions", description.topicPartitions().stream()
                        .map(TopicPartition::toString).sorted().toList());
    }

    private void transactions() throws Exception {
        String topic = probe.topic("t");
        String txnId = probe.topic("txn");
        TopicPartition partition = new TopicPartition(topic, 0);
        admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, probe.bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        long[] producerId = {-1};
        short[] epoch = {-1};
        KafkaProducer<String, String> producer = new KafkaProducer<>(props,
                new StringSerializer(), new StringSerializer());
        try {
            AdminProbe.step("transaction.open", () -> {
                producer.initTransactions();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>(topic, 0, "k", "one")).get();
                producer.send(new ProducerRecord<>(topic, 0, "k", "two")).get();
                return "done";
            });
            AdminProbe.step("listOffsets.openTransaction", () -> {
                Map<String, Object> out = new TreeMap<>();
                for (org.apache.kafka.common.IsolationLevel level
                        : org.apache.kafka.common.IsolationLevel.values()) {
                    out.put(level.name(), admin.listOffsets(Map.of(partition,
                            org.apache.kafka.clients.admin.OffsetSpec.latest()),
                            new org.apache.kafka.clients.admin.ListOffsetsOptions(level))
                            .partitionResult(partition).get().offset());
                }
                return out;
            });
            AdminProbe.step("describeProducers", () -> {
                List<ProducerState> states = admin.describeProducers(List.of(partition))
                        .partitionResult(partition).get().activeProducers();
                List<Object> out = new ArrayList<>();
                for (ProducerState state : states) {
                    producerId[0] = state.producerId();
                    epoch[0] = (short) state.producerEpoch();
                    out.add(AdminProbe.mapOf("epoch", state.producerEpoch(),
                            "lastSequence", state.lastSequence(),
                            "txnStartOffset", state.currentTransactionStartOffset().orElse(-1),
                            "coordinatorEpoch", state.coordinatorEpoch().orElse(-1)));
                }
                return out;
            });
            AdminProbe.step("describeTransactions.ongoing", () -> transaction(admin
                    .describeTransactions(List.of(txnId)).description(txnId).get(), producerId[0]));
            AdminProbe.step("listTransactions", () -> {
                List<String> out = new ArrayList<>();
                admin.listTransactions(new ListTransactionsOptions().filterProducerIds(
                        Set.of(producerId[0]))).all().get().forEach(listing -> out.add(
                        listing.transactionalId() + " " + listing.state()
                                + (listing.producerId() == producerId[0] ? " same-pid" : "")));
                return out;
            });
            AdminProbe.step("listTransactions.ongoingFilter", () -> {
                List<String> out = new ArrayList<>();
                admin.listTransactions(new ListTransactionsOptions().filterStates(Set.of(
                        org.apache.kafka.clients.admin.TransactionState.ONGOING))).all().get()
                        .forEach(listing -> {
                            if (listing.transactionalId().startsWith(probe.prefix)) {
                                out.add(listing.transactionalId());
                            }
                        });
                return out;
            });
            AdminProbe.step("describeTransactions.unknown", () -> admin.describeTransactions(
                    List.of(probe.topic("notxn"))).all().get());
            AdminProbe.step("abortTransaction", () -> {
                admin.abortTransaction(new AbortTransactionSpec(partition, producerId[0],
                        epoch[0], 0)).all().get();
                return "done";
            });
            AdminProbe.step("fenceProducers", () -> {
                admin.fenceProducers(List.of(txnId)).all().get();
                return "done";
            });
            AdminProbe.step("describeTransactions.fenced", () -> {
                long deadline = System.currentTimeMillis() + 10_000;
                TransactionDescription description = admin.describeTransactions(List.of(txnId))
                        .description(txnId).get();
                while (description.state().name().startsWith("PREPARE")
                        && System.currentTimeMillis() < deadline) {
                    Thread.sleep(50);
                    description = admin.describeTransactions(List.of(txnId)).description(txnId)
                            .get();
                }
                Map<String, Object> out = transaction(description, producerId[0]);
                out.put("epochAfterFence", description.producerEpoch() - epoch[0]);
                out.remove("epoch");
                return out;
            });
            AdminProbe.step("producer.commitAfterFence", () -> {
                producer.commitTransaction();
                return "committed";
            });
        } finally {
            producer.close(Duration.ofSeconds(5));
        }
        admin.deleteTopics(List.of(topic)).all().get();
    }

    private void features() {
        AdminProbe.step("describeFeatures", () -> {
            FeatureMetadata metadata = admin.describeFeatures().featureMetadata().get();
            Map<String, Object> out = new TreeMap<>();
            out.put("finalized", new TreeMap<>(metadata.finalizedFeatures()).keySet());
            out.put("supported", new TreeMap<>(metadata.supportedFeatures()).keySet());
            out.put("epochKnown", metadata.finalizedFeaturesEpoch().isPresent());
            return out;
        });
        AdminProbe.step("updateFeatures.unknownFeature", () -> admin.updateFeatures(
                Map.of("no.such.feature", new FeatureUpdate((short) 1,
                        FeatureUpdate.UpgradeType.UPGRADE)),
                new UpdateFeaturesOptions().validateOnly(true)).all().get());
        AdminProbe.step("updateFeatures.downgradeMetadataVersionUnsafe", () -> admin
                .updateFeatures(Map.of("metadata.version", new FeatureUpdate((short) 1,
                        FeatureUpdate.UpgradeType.UNSAFE_DOWNGRADE)),
                        new UpdateFeaturesOptions().validateOnly(true)).all().get());
        AdminProbe.step("describeMetadataQuorum", () -> {
            QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get();
            return AdminProbe.mapOf("leader", probe.nodeId(quorum.leaderId()),
                    "voters", quorum.voters().stream().map(v -> probe.nodeId(v.replicaId()))
                            .toList(),
                    "observers", quorum.observers().size(),
                    "highWatermarkPositive", quorum.highWatermark() > 0,
                    "leaderEpochPositive", quorum.leaderEpoch() > 0);
        });
    }

    private void unserved() {
        AdminProbe.step("describeDelegationToken", () ->
                admin.describeDelegationToken().delegationTokens().get().size());
        // the session's Kafka is shared: only this probe's resources are listed
        AdminProbe.step("listConfigResources.clientMetrics", () -> admin.listConfigResources(
                Set.of(ConfigResource.Type.CLIENT_METRICS),
                new org.apache.kafka.clients.admin.ListConfigResourcesOptions()).all().get()
                .stream().map(ConfigResource::name).filter(n -> n.startsWith(probe.prefix))
                .sorted().toList());
        AdminProbe.step("listClientMetricsResources", () -> {
            @SuppressWarnings("deprecation")
            var all = admin.listClientMetricsResources().all().get();
            return all.stream().map(Object::toString).filter(n -> n.contains(probe.prefix))
                    .sorted().toList();
        });
        AdminProbe.step("describeShareGroups.unknown", () -> admin.describeShareGroups(
                List.of(probe.topic("share"))).all().get().get(probe.topic("share"))
                .groupState().name());
        AdminProbe.step("listShareGroupOffsets", () -> admin.listShareGroupOffsets(Map.of(
                probe.topic("share"), new ListShareGroupOffsetsSpec())).all().get().size());
        AdminProbe.step("alterShareGroupOffsets.unknown", () -> admin.alterShareGroupOffsets(
                probe.topic("share"), Map.of(new TopicPartition(probe.topic("none"), 0), 0L))
                .all().get());
        AdminProbe.step("deleteShareGroupOffsets.unknown", () -> admin.deleteShareGroupOffsets(
                probe.topic("share"), Set.of(probe.topic("none"))).all().get());
        AdminProbe.step("deleteShareGroups.unknown", () -> admin.deleteShareGroups(
                List.of(probe.topic("share"))).all().get());
        AdminProbe.step("listStreamsGroupOffsets.unknown", () -> admin.listStreamsGroupOffsets(
                Map.of(probe.topic("streams"),
                        new org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec()))
                .all().get().size());
        AdminProbe.step("deleteStreamsGroups.unknown", () -> admin.deleteStreamsGroups(
                List.of(probe.topic("streams"))).all().get());
        AdminProbe.step("unregisterBroker.unknown", () -> admin.unregisterBroker(
                probe.selfId + 98).all().get());
        AdminProbe.step("describeStreamsGroups.unknown", () -> admin.describeStreamsGroups(
                List.of(probe.topic("streams"))).all().get().size());
    }
}
