// QuartzGolden prints golden fire times from the real Quartz for xjob's
// schedule tests (see quartz_golden_test.go). Input: a TSV file with one
// case a line — name, expr, time zone, RFC 3339 start, n — and '#'
// comments. Output on stdout: the JSON array the test reads.
//
// Run it with `make quartz-golden` (Debian's libquartz2-java 2.3.2 and a
// JDK 17): it is not part of `make test`, the JSON it writes is committed.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.TimeZone;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.quartz.CronExpression;

public class QuartzGolden {
    public static void main(String[] args) throws Exception {
        List<String> out = new ArrayList<>();
        ExecutorService pool = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        });
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\t");
            if (f.length != 5) {
                throw new IllegalArgumentException("want 5 tab-separated fields: " + line);
            }
            String name = f[0], expr = f[1], tz = f[2], from = f[3];
            int n = Integer.parseInt(f[4]);
            StringBuilder b = new StringBuilder();
            b.append("{\"name\": ").append(q(name)).append(", \"expr\": ").append(q(expr))
             .append(", \"tz\": ").append(q(tz)).append(", \"from\": ").append(q(from))
             .append(", \"n\": ").append(n);
            Future<Object[]> res = pool.submit(() -> fires(expr, tz, from, n));
            Object[] r;
            try {
                r = res.get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                res.cancel(true);
                r = new Object[] {e.toString(), false, new ArrayList<String>()};
            }
            if (r[0] != null) {
                b.append(", \"error\": ").append(q((String) r[0]));
            }
            b.append(", \"end\": ").append(r[1]).append(", \"want\": [");
            @SuppressWarnings("unchecked")
            List<String> want = (List<String>) r[2];
            for (int i = 0; i < want.size(); i++) {
                b.append(i > 0 ? ", " : "").append(q(want.get(i)));
            }
            out.add(b.append("]}").toString());
        }
        System.out.println("[\n" + String.join(",\n", out) + "\n]");
    }

    // fires returns {error or null, end, fire times}.
    static Object[] fires(String expr, String tz, String from, int n) {
        List<String> want = new ArrayList<>();
        CronExpression c;
        try {
            c = new CronExpression(expr);
        } catch (Exception e) {
            return new Object[] {e.getMessage(), false, want};
        }
        TimeZone zone = TimeZone.getTimeZone(tz);
        c.setTimeZone(zone);
        Date at = Date.from(Instant.parse(from));
        for (int i = 0; i < n; i++) {
            Date next = c.getNextValidTimeAfter(at);
            if (next == null) {
                return new Object[] {null, true, want};
            }
            want.add(ZonedDateTime.ofInstant(next.toInstant(), zone.toZoneId())
                .format(DateTimeFormatter.ISO_OFFSET_DATE_TIME));
            at = next;
        }
        return new Object[] {null, false, want};
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
