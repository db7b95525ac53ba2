// HashGolden prints golden vectors for xjob's CONSISTENT_HASH router (see
// hash_test.go): xxl-job's ExecutorRouteConsistentHash algorithm (2.4.x)
// in Java, as xxl-job runs it — a TreeMap ring of VIRTUAL_NODE_NUM = 100
// points per address at hash("SHARD-" + address + "-NODE-" + i), put in
// address order and node order (an equal hash put later replaces the
// earlier one); the job at hash(String.valueOf(jobId)) goes to the first
// point at or after it (tailMap), else to the ring's first point; hash is
// the MD5 of the UTF-8 key, digest bytes 0-3 as a little-endian unsigned
// 32-bit integer. Written for xjob from that description; its point is
// that Java's String, MD5, TreeMap and long arithmetic compute the
// vectors, not the Go code under test.
//
// Output on stdout: the JSON the test reads. Run it with
// `make hash-golden` (JDK 17); it is not part of `make test`, the JSON it
// writes is committed.
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

public class HashGolden {
    static final int VIRTUAL_NODE_NUM = 100;

    static final String[] KEYS = {"1", "42", "SHARD-http://10.0.0.1:9999/-NODE-0", "SHARD-http://执行器.example/-NODE-99", ""};

    static final String[][] ADDRESS_LISTS = {
        {"http://127.0.0.1:9999/"},
        {"http://10.0.0.1:9999/", "http://10.0.0.2:9999/"},
        {"http://10.0.0.1:9999/", "http://10.0.0.2:9999/", "http://10.0.0.3:9999/"},
        {"http://192.168.1.10:9999/", "http://192.168.1.11:9999/", "http://192.168.1.12:9999/", "http://192.168.1.13:9999/", "http://192.168.1.14:9999/"},
        {"http://exec-a.internal:8080", "https://abc123.lambda-url.eu-west-1.on.aws/", "http://exec-b.internal:8080", "http://[::1]:9999/"},
        {"http://执行器.example/", "http://10.0.0.2:9999/"},
    };

    // Job ids 1-20, then some spread out, up to Integer.MAX_VALUE (xxl-job's
    // job ids are ints).
    static final int[] JOB_IDS = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
        0, 42, 100, 999, 1000, 4242, 65536, 123456, 1000000, Integer.MAX_VALUE};

    static long hash(String key) throws Exception {
        MessageDigest md5 = MessageDigest.getInstance("MD5");
        byte[] d = md5.digest(key.getBytes(StandardCharsets.UTF_8));
        long h = ((long) (d[3] & 0xFF) << 24) | ((long) (d[2] & 0xFF) << 16) | ((long) (d[1] & 0xFF) << 8) | (d[0] & 0xFF);
        return h & 0xffffffffL;
    }

    static String route(int jobId, String[] addresses) throws Exception {
        TreeMap<Long, String> ring = new TreeMap<>();
        for (String a : addresses) {
            for (int i = 0; i < VIRTUAL_NODE_NUM; i++) {
                ring.put(hash("SHARD-" + a + "-NODE-" + i), a);
            }
        }
        SortedMap<Long, String> tail = ring.tailMap(hash(String.valueOf(jobId)));
        if (!tail.isEmpty()) {
            return tail.get(tail.firstKey());
        }
        return ring.firstEntry().getValue();
    }

    public static void main(String[] args) throws Exception {
        StringBuilder b = new StringBuilder("{\n\"hashes\": [\n");
        for (int i = 0; i < KEYS.length; i++) {
            b.append("  {\"key\": ").append(q(KEYS[i])).append(", \"hash\": ").append(hash(KEYS[i]))
             .append(i + 1 < KEYS.length ? "},\n" : "}\n");
        }
        b.append("],\n\"routes\": [\n");
        for (int l = 0; l < ADDRESS_LISTS.length; l++) {
            String[] addrs = ADDRESS_LISTS[l];
            List<String> as = new ArrayList<>();
            for (String a : addrs) {
                as.add(q(a));
            }
            List<String> picks = new ArrayList<>();
            for (int id : JOB_IDS) {
                picks.add("[" + id + ", " + List.of(addrs).indexOf(route(id, addrs)) + "]");
            }
            b.append("  {\"addrs\": [").append(String.join(", ", as)).append("],\n   \"picks\": [")
             .append(String.join(", ", picks)).append(l + 1 < ADDRESS_LISTS.length ? "]},\n" : "]}\n");
        }
        System.out.println(b.append("]\n}").toString());
    }

    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                default:
                    if (ch < 0x20) {
                        b.append(String.format("\\u%04x", (int) ch));
                    } else {
                        b.append(ch);
                    }
            }
        }
        return b.append('"').toString();
    }
}
