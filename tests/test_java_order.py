"""mockbroker.cluster.java_order against orders java.util.HashMap really produces (printed
by a JVM for these keys)."""

from mockbroker.cluster.java_order import java_hash_order, java_string_hash


def test_string_hash_is_java_string_hash_code() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322  # "hello".hashCode()
    assert java_string_hash("polygenelubricants") == 2 ** 32 - 2 ** 31  # Integer.MIN_VALUE


def test_hash_order_is_a_java_hash_map_iteration_order() -> None:
    assert java_hash_order(["ghost", "dup", "few", "many", "odd", ""]) == [
        "", "ghost", "few", "many", "dup", "odd"]
    assert java_hash_order(["BIDIRECTIONAL", "UPGRADE", "DOWNGRADE", "DISABLED"]) == [
        "DISABLED", "DOWNGRADE", "UPGRADE", "BIDIRECTIONAL"]
    many = [f"user-{i}" for i in range(20)]  # past 12 entries the table grows to 32
    assert sorted(java_hash_order(many)) == sorted(many)
    assert java_hash_order(many) == JAVA_ORDER_OF_20_USERS


# new HashMap<>() with "user-0" .. "user-19" put in order, keySet() as a JVM prints it
JAVA_ORDER_OF_20_USERS = [
    "user-1", "user-0", "user-19", "user-17", "user-18", "user-5", "user-11", "user-4",
    "user-12", "user-3", "user-2", "user-10", "user-9", "user-15", "user-8", "user-16",
    "user-7", "user-13", "user-6", "user-14"]
