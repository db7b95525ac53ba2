// Starts fauxqs (the SQS stand-in used by internal/testenv/emulator) without request
// logging: its CLI logs every request and ignores FAUXQS_LOGGER=false.
//
// Usage: node fauxqs.js [port]   (port 0 or omitted: the OS picks one)
// Prints "READY <port>" once listening. fauxqs binds 0.0.0.0 and names
// queue URLs after sqs.<region>.localhost; clients send to their
// BaseEndpoint anyway. Exits when stdin closes, so a test binary that dies
// without cleanup does not leave the server behind.
import { startFauxqs } from 'fauxqs'

const port = parseInt(process.argv[2] || '0', 10)
const server = await startFauxqs({ port, logger: false })
process.stdout.write(`READY ${server.port}\n`)
process.stdin.on('end', () => process.exit(0))
process.stdin.on('error', () => process.exit(0))
process.stdin.resume()
