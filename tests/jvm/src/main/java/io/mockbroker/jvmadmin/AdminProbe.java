package io.mockbroker.jvmadmin;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

import io.mockbroker.jvmjson.Json;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

/**
 * The Java AdminClient against one cluster: every Admin call mockbroker serves (and the ones it
 * does not, which must fail the way Kafka's client fails for an unsupported API), printing one
 * JSON line per observation: {"step": NAME, "ok": RESULT} or {"step": NAME, "error": CLASS}.
 *
 * <p>Usage: AdminProbe BOOTSTRAP PREFIX. Every topic, group, user, transactional id and ACL
 * resource is named with PREFIX, so a shared real Kafka is not disturbed. What differs between
 * clusters by nature (node ids, cluster and topic ids, producer ids, paths) is printed
 * normalised: the cluster's only node is "self", ids as "same as ..." flags. The calls are
 * grouped by area in {@link AdminSteps} (topics, configs, records), {@link AdminSecuritySteps}
 * (ACLs, quotas, SCRAM) and {@link AdminGroupSteps} (groups, transactions, features, quorum).
 */
public final class AdminProbe {
    static final Duration WAIT = Duration.ofSeconds(20);

    final Admin admin;
    final String bootstrap;
    final String prefix;
    int selfId = -1;

    AdminProbe(String bootstrap, String prefix) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "admin-probe");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        this.admin = Admin.create(props);
        this.bootstrap = bootstrap;
        this.prefix = prefix;
    }

    /** A step's body: returns what is printed as "ok". */
    interface Call {
        Object run() throws Exception;
    }

    /** Run one step and print its observation; an exception prints its class. */
    static void step(String name, Call call) {
        Map<String, Object> line = new TreeMap<>();
        line.put("step", name);
        try {
            line.put("ok", call.run());
        } catch (Throwable error) {
            line.put("error", errorName(error));
        }
        System.out.println(Json.write(line));
        System.out.flush();
    }

    /** The simple class name of what a future failed with (ExecutionException unwrapped). */
    static String errorName(Throwable error) {
        Throwable cause = error;
        while ((cause instanceof ExecutionException
                || cause instanceof java.util.concurrent.CompletionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause.getClass().getSimpleName();
    }

    String node(Node node) {
        if (node == null) {
            return null;
        }
        return node.id() == selfId ? "self" : "node-" + node.id();
    }

    String nodeId(int id) {
        return id == selfId ? "self" : "node-" + id;
    }

    String topic(String suffix) {
        return prefix + "-" + suffix;
    }

    Map<String, Object> describeTopic(TopicDescription description) {
        Map<String, Object> out = new TreeMap<>();
        out.put("internal", description.isInternal());
        List<Object> partitions = new ArrayList<>();
        for (TopicPartitionInfo info : description.partitions()) {
            Map<String, Object> partition = new TreeMap<>();
            partition.put("partition", info.partition());
            partition.put("leader", node(info.leader()));
            partition.put("replicas", info.replicas().stream().map(this::node).toList());
            partition.put("isr", info.isr().stream().map(this::node).toList());
            partition.put("elr", info.elr().stream().map(this::node).toList());
            partitions.add(partition);
        }
        out.put("partitions", partitions);
        out.put("authorizedOperations", sortedNames(description.authorizedOperations()));
        return out;
    }

    static List<String> sortedNames(Collection<?> items) {
        if (items == null) {
            return null;
        }
        return items.stream().map(String::valueOf).sorted().toList();
    }

    /** The named entries of a config: value, source, read-only and sensitive flags. */
    static Map<String, Object> entries(Config config, List<String> names) {
        Map<String, Object> out = new TreeMap<>();
        for (String name : names) {
            ConfigEntry entry = config.get(name);
            if (entry == null) {
                out.put(name, null);
                continue;
            }
            List<Object> synonyms = new ArrayList<>();
            for (ConfigEntry.ConfigSynonym synonym : entry.synonyms()) {
                synonyms.add(synonym.name() + "=" + synonym.value() + " (" + synonym.source() + ")");
            }
            out.put(name, List.of(String.valueOf(entry.value()), entry.source().name(),
                    entry.isReadOnly() ? "read-only" : "alterable",
                    entry.isSensitive() ? "sensitive" : "plain", String.valueOf(entry.type()),
                    synonyms));
        }
        return out;
    }

    Config describeConfig(ConfigResource resource, boolean synonyms) throws Exception {
        return admin.describeConfigs(List.of(resource),
                new org.apache.kafka.clients.admin.DescribeConfigsOptions()
                        .includeSynonyms(synonyms))
                .all().get().get(resource);
    }

    /** Repeat `call` until `done` holds for its result, at most 10 s (a broker applies a
     * change from the metadata log after the controller committed it, so a read right after
     * a write may not see it yet); the last result, or the last failure. */
    static Object until(Call call, java.util.function.Predicate<Object> done) throws Exception {
        long deadline = System.currentTimeMillis() + 10_000;
        while (true) {
            Object result = null;
            Exception failure = null;
            try {
                result = call.run();
            } catch (Exception error) {
                failure = error;
            }
            if ((failure == null && done.test(result)) || System.currentTimeMillis() > deadline) {
                if (failure != null) {
                    throw failure;
                }
                return result;
            }
            Thread.sleep(50);
        }
    }

    static int size(Object value) {
        if (value instanceof Collection<?> items) {
            return items.size();
        }
        return value instanceof Map<?, ?> map ? map.size() : -1;
    }

    /** Describe until `name` has `value` (a broker applies config changes from the metadata
     * log after the controller committed them), at most 10 s. */
    Config describeConfigUntil(ConfigResource resource, String name, String value,
            boolean synonyms) throws Exception {
        long deadline = System.currentTimeMillis() + 10_000;
        Config config = describeConfig(resource, synonyms);
        while (!String.valueOf(config.get(name) == null ? null : config.get(name).value())
                .equals(value) && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
            config = describeConfig(resource, synonyms);
        }
        return config;
    }

    static Map<String, Object> offsetInfo(ListOffsetsResult.ListOffsetsResultInfo info) {
        Map<String, Object> out = new TreeMap<>();
        out.put("offset", info.offset());
        out.put("timestamp", info.timestamp() < 0 ? info.timestamp()
                : info.timestamp() - AdminSteps.BASE_TIMESTAMP);
        out.put("leaderEpoch", info.leaderEpoch().orElse(null));
        return out;
    }

    static Map<String, Object> mapOf(Object... keysAndValues) {
        Map<String, Object> out = new TreeMap<>();
        for (int i = 0; i + 1 < keysAndValues.length; i += 2) {
            out.put(String.valueOf(keysAndValues[i]), keysAndValues[i + 1]);
        }
        return out;
    }

    static <T> Optional<T> none() {
        return Optional.empty();
    }

    static Set<String> names(Collection<String> names, String prefix) {
        Set<String> out = new java.util.TreeSet<>();
        for (String name : names) {
            if (name.startsWith(prefix)) {
                out.add(name);
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        AdminProbe probe = new AdminProbe(args[0], args[1]);
        try {
            new AdminSteps(probe).run();
            new AdminSecuritySteps(probe).run();
            new AdminGroupSteps(probe).run();
            new AdminSteps(probe).cleanUp();
        } finally {
            probe.admin.close(Duration.ofSeconds(5));
        }
        System.out.println(Json.write(Map.of("step", "done")));
        System.exit(0);
    }
}
