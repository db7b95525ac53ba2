package dynamostore

// Page bodies come in two formats:
//
//   - a raw deflate stream of the logs' JSON (every release before this
//     one wrote only that), and
//   - pageBodyDict1, one byte, then a deflate stream of the logs' JSON
//     (HTML characters unescaped) compressed with pageDict1 as the preset
//     dictionary.
//
// A page of one or two logs (a sparse deployment's page: W5's hundred
// jobs a minute put about one log in each page) compresses poorly on its
// own: the field names and the trigger message's template are most of a
// log's bytes, and deflate has nothing earlier in the stream to refer
// them to. The dictionary gives it that history, so a one-log page fits
// far under the 1 KB a write unit covers, and a dense page's logs each
// cost fewer bytes too (a page write is billed by its size, and stored
// bytes by theirs).
//
// The marker byte cannot begin a raw deflate stream: its block type bits
// (1–2) are 11, which RFC 1951 reserves, so Go's decompressor rejects
// it. A release that knows only raw streams therefore fails to decode a
// new page (and writes nothing) instead of taking it for an empty one.

// pageBodyDict1 marks a body compressed with pageDict1.
const pageBodyDict1 = 0x0f

// pageDict1 is the preset dictionary of pageBodyDict1 bodies. It is part
// of the stored format: never change it (a new dictionary needs a new
// marker, and readers keep this one); TestPageDictFrozen pins it. Deflate
// codes nearer strings in fewer bits, so the strings every log has come
// last.
const pageDict1 = `MANUAL","RETRY","PARENT","MISFIRE","API",` +
	`LAST<br>ROUND<br>RANDOM<br>CONSISTENT_HASH<br>LEAST_FREQUENTLY_USED<br>LEAST_RECENTLY_USED<br>FAILOVER<br>BUSYOVER<br>SHARDING_BROADCAST<br>` +
	`DISCARD_LATER<br>COVER_EARLY<br>manual<br>built-in (HTTP job)<br>Trigger result: fail<br>` +
	`job killed manually","handleCode":500,"handleMsg":"timeout","alarmStatus":1,` +
	`Trigger type: CRON<br>Admin address: https://<br>Executor registry type: automatic<br>Executor address list: http://` +
	`<br>Route strategy: FIRST<br>Block strategy: SERIAL_EXECUTION<br>Timeout: 0<br>Fail retry count: 0<br><br>` +
	`<span style=\"color:#00c0ef;\" > >>>>>>>>>>>Trigger<<<<<<<<<<< </span><br>Trigger result: success<br>address: http://` +
	`<br>code: 200<br>msg: ","executorAddress":"http://","executorHandler":"demoJobHandler","executorParam":"",` +
	`"executorShardingParam":"","executorFailRetryCount":0,"handleTime":17,"handleCode":200,"handleMsg":"","alarmStatus":0,` +
	`"claimUntil":17,"version":1},{"id":1,"occurrenceId":"j1/t17/s0","jobId":1,"jobGroup":1,"triggerType":"CRON",` +
	`"scheduleTime":17,"triggerTime":17,"triggerCode":200,"triggerMsg":"Trigger type: CRON<br>Executor registry type: automatic<br>` +
	`Executor address list: http://`
