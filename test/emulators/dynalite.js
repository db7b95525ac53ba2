// Starts dynalite (the DynamoDB stand-in used by internal/testenv/emulator) on a loopback
// port, in memory, with tables ACTIVE at once (createTableMs 0; the default
// 500 ms CREATING state makes the SDK's TableExists waiter sleep 20 s).
//
// Usage: node dynalite.js [port]   (port 0 or omitted: the OS picks one)
// Prints "READY <port>" once listening. Exits when stdin closes, so a test
// binary that dies without cleanup does not leave the server behind.

import dynalite from 'dynalite'

const port = parseInt(process.argv[2] || '0', 10)
const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`READY ${server.address().port}\n`)
})
process.stdin.on('end', () => process.exit(0))
process.stdin.on('error', () => process.exit(0))
process.stdin.resume()
