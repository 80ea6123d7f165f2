package io.mockbroker.jvmadmin;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeUserScramCredentialsResult;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/** ACLs, client quotas and SCRAM credentials. */
final class AdminSecuritySteps {
    private final AdminProbe probe;
    private final Admin admin;

    AdminSecuritySteps(AdminProbe probe) {
        this.probe = probe;
        this.admin = probe.admin;
    }

    void run() {
        acls();
        quotas();
        scram();
    }

    private String alice() {
        return "User:" + probe.prefix + "-alice";
    }

    private List<String> bindings(java.util.Collection<AclBinding> found) {
        List<String> out = new ArrayList<>();
        for (AclBinding binding : found) {
            if (binding.pattern().name().startsWith(probe.prefix)) {
                out.add(binding.pattern().resourceType() + ":" + binding.pattern().patternType()
                        + ":" + binding.pattern().name() + " " + binding.entry().principal()
                        + "@" + binding.entry().host() + " " + binding.entry().operation()
                        + " " + binding.entry().permissionType());
            }
        }
        out.sort(null);
        return out;
    }

    private AclBindingFilter byPrincipal(String principal) {
        return new AclBindingFilter(ResourcePatternFilter.ANY, new AccessControlEntryFilter(
                principal, null, AclOperation.ANY, AclPermissionType.ANY));
    }

    private void acls() {
        AclBinding readTopic = new AclBinding(
                new ResourcePattern(ResourceType.TOPIC, probe.topic("acl"), PatternType.LITERAL),
                new AccessControlEntry(alice(), "*", AclOperation.READ, AclPermissionType.ALLOW));
        AclBinding denyGroups = new AclBinding(
                new ResourcePattern(ResourceType.GROUP, probe.prefix, PatternType.PREFIXED),
                new AccessControlEntry(alice(), "127.0.0.1", AclOperation.DESCRIBE,
                        AclPermissionType.DENY));
        AclBinding writeTxn = new AclBinding(
                new ResourcePattern(ResourceType.TRANSACTIONAL_ID, probe.topic("txn"),
                        PatternType.LITERAL),
                new AccessControlEntry("User:" + probe.prefix + "-bob", "*", AclOperation.WRITE,
                        AclPermissionType.ALLOW));
        AdminProbe.step("createAcls", () -> {
            admin.createAcls(List.of(readTopic, denyGroups, writeTxn)).all().get();
            return "done";
        });
        AdminProbe.step("createAcls.invalid", () -> admin.createAcls(List.of(new AclBinding(
                new ResourcePattern(ResourceType.TOPIC, probe.topic("acl"), PatternType.LITERAL),
                new AccessControlEntry("alice-without-type", "*", AclOperation.READ,
                        AclPermissionType.ALLOW)))).all().get());
        AdminProbe.step("describeAcls.byPrincipal", () -> AdminProbe.until(() ->
                bindings(admin.describeAcls(byPrincipal(alice())).values().get()),
                found -> AdminProbe.size(found) == 2));
        AdminProbe.step("describeAcls.any", () ->
                bindings(admin.describeAcls(AclBindingFilter.ANY).values().get()));
        AdminProbe.step("describeAcls.matchingTopic", () -> bindings(admin.describeAcls(
                new AclBindingFilter(new ResourcePatternFilter(ResourceType.GROUP,
                        probe.topic("group"), PatternType.MATCH), AccessControlEntryFilter.ANY))
                .values().get()));
        AdminProbe.step("deleteAcls", () -> {
            Map<String, Object> out = new TreeMap<>();
            admin.deleteAcls(List.of(byPrincipal(alice()))).values().forEach((filter, future) -> {
                try {
                    List<AclBinding> deleted = new ArrayList<>();
                    future.get().values().forEach(result -> deleted.add(result.binding()));
                    out.put(filter.entryFilter().principal(), bindings(deleted));
                } catch (Exception error) {
                    out.put(filter.entryFilter().principal(), AdminProbe.errorName(error));
                }
            });
            admin.deleteAcls(List.of(byPrincipal("User:" + probe.prefix + "-bob"))).all().get();
            return out;
        });
        AdminProbe.step("describeAcls.afterDelete", () -> AdminProbe.until(() ->
                bindings(admin.describeAcls(AclBindingFilter.ANY).values().get()),
                found -> AdminProbe.size(found) == 0));
    }

    private void quotas() {
        ClientQuotaEntity user = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER,
                probe.prefix + "-user"));
        ClientQuotaEntity userClient = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER,
                probe.prefix + "-user", ClientQuotaEntity.CLIENT_ID, probe.prefix + "-client"));
        ClientQuotaFilter forUser = ClientQuotaFilter.contains(List.of(
                ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER,
                        probe.prefix + "-user")));
        AdminProbe.step("alterClientQuotas", () -> {
            admin.alterClientQuotas(List.of(
                    new ClientQuotaAlteration(user, List.of(
                            new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0),
                            new ClientQuotaAlteration.Op("request_percentage", 50.0))),
                    new ClientQuotaAlteration(userClient, List.of(
                            new ClientQuotaAlteration.Op("consumer_byte_rate", 2048.0)))))
                    .all().get();
            return "done";
        });
        AdminProbe.step("describeClientQuotas", () -> AdminProbe.until(() -> quotaMap(forUser),
                found -> AdminProbe.size(found) == 2));
        AdminProbe.step("describeClientQuotas.strict", () -> quotaMap(ClientQuotaFilter
                .containsOnly(List.of(ClientQuotaFilterComponent.ofEntity(
                        ClientQuotaEntity.USER, probe.prefix + "-user")))));
        AdminProbe.step("alterClientQuotas.invalidKey", () -> admin.alterClientQuotas(List.of(
                new ClientQuotaAlteration(user, List.of(
                        new ClientQuotaAlteration.Op("no_such_quota", 1.0))))).all().get());
        AdminProbe.step("alterClientQuotas.remove", () -> {
            admin.alterClientQuotas(List.of(
                    new ClientQuotaAlteration(user, List.of(
                            new ClientQuotaAlteration.Op("producer_byte_rate", null),
                            new ClientQuotaAlteration.Op("request_percentage", null))),
                    new ClientQuotaAlteration(userClient, List.of(
                            new ClientQuotaAlteration.Op("consumer_byte_rate", null)))))
                    .all().get();
            return AdminProbe.until(() -> quotaMap(forUser), found -> AdminProbe.size(found) == 0);
        });
    }

    private Map<String, Object> quotaMap(ClientQuotaFilter filter) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        admin.describeClientQuotas(filter).entities().get().forEach((entity, values) ->
                out.put(new TreeMap<>(entity.entries()).toString(), new TreeMap<>(values)));
        return out;
    }

    private void scram() {
        String user = probe.prefix + "-scram";
        AdminProbe.step("alterUserScramCredentials", () -> {
            for (ScramCredentialInfo info : List.of(
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096))) {
                admin.alterUserScramCredentials(List.of(
                        new UserScramCredentialUpsertion(user, info, "secret"))).all().get();
            }
            return "done";
        });
        AdminProbe.step("alterUserScramCredentials.sameUserTwice", () ->
                admin.alterUserScramCredentials(List.of(
                        new UserScramCredentialUpsertion(user, new ScramCredentialInfo(
                                ScramMechanism.SCRAM_SHA_256, 8192), "secret"),
                        new UserScramCredentialUpsertion(user, new ScramCredentialInfo(
                                ScramMechanism.SCRAM_SHA_512, 4096), "secret"))).all().get());
        AdminProbe.step("describeUserScramCredentials", () -> AdminProbe.until(
                () -> scramOf(List.of(user)),
                found -> AdminProbe.size(((Map<?, ?>) found).get(user)) == 2));
        AdminProbe.step("describeUserScramCredentials.unknown", () ->
                scramOf(List.of(probe.prefix + "-nobody")));
        AdminProbe.step("alterUserScramCredentials.tooFewIterations", () ->
                admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10), "secret")))
                        .all().get());
        AdminProbe.step("alterUserScramCredentials.deleteMissing", () ->
                admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(
                        probe.prefix + "-nobody", ScramMechanism.SCRAM_SHA_256))).all().get());
        AdminProbe.step("alterUserScramCredentials.deleteMissingTwice", () ->
                admin.alterUserScramCredentials(List.of(
                        new UserScramCredentialDeletion(probe.prefix + "-nobody",
                                ScramMechanism.SCRAM_SHA_256),
                        new UserScramCredentialDeletion(probe.prefix + "-nobody",
                                ScramMechanism.SCRAM_SHA_512))).all().get());
        AdminProbe.step("alterUserScramCredentials.delete", () -> {
            admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)))
                    .all().get();
            Object left = AdminProbe.until(() -> scramOf(List.of(user)),
                    found -> AdminProbe.size(((Map<?, ?>) found).get(user)) == 1);
            admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512)))
                    .all().get();
            return AdminProbe.mapOf("afterFirst", left, "afterBoth", AdminProbe.until(
                    () -> scramOf(List.of(user)),
                    found -> ((Map<?, ?>) found).get(user) instanceof String));
        });
    }

    private Map<String, Object> scramOf(List<String> users) throws Exception {
        DescribeUserScramCredentialsResult result = admin.describeUserScramCredentials(users);
        Map<String, Object> out = new TreeMap<>();
        for (String user : users) {
            try {
                UserScramCredentialsDescription description = result.description(user).get();
                out.put(user, description.credentialInfos().stream()
                        .map(info -> info.mechanism() + "/" + info.iterations()).sorted().toList());
            } catch (Exception error) {
                out.put(user, AdminProbe.errorName(error));
            }
        }
        return out;
    }
}
