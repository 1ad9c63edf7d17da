import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import { describe, it } from 'node:test'
import { acceptQueueReader } from '../../src/http/accept-queue.ts'

const linux = fs.existsSync('/proc/net/tcp')

describe('the length of the kernel\'s accept queue (src/http/accept-queue.ts)', () => {
  it('counts the connections the kernel completed that the process has not taken, and none once taken', { skip: linux ? false : 'no /proc/net/tcp here' }, async () => {
    const server = net.createServer(socket => { socket.destroy() })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    const address = server.address() as net.AddressInfo
    const reader = acceptQueueReader(address)
    assert.ok(reader !== undefined)
    try {
      assert.equal(reader.read(), 0)
      let accepted = 0
      const allAccepted = new Promise<void>(resolve => server.on('connection', () => { if (++accepted === 5) resolve() }))
      // Another process connects five times while this one's loop is blocked (execFileSync), so
      // none of them can be taken yet: the kernel completes them and queues them.
      execFileSync(process.execPath, ['-e', `
        const net = require('node:net')
        let open = 0
        for (let i = 0; i < 5; i++) net.connect(${address.port}, '127.0.0.1', () => { if (++open === 5) process.exit(0) })
      `])
      assert.equal(reader.read(), 5)
      await allAccepted
      assert.equal(reader.read(), 0)
    } finally {
      reader.close()
      await new Promise(resolve => server.close(resolve))
    }
  })

  it('says nothing of a port nobody listens on', { skip: linux ? false : 'no /proc/net/tcp here' }, () => {
    const reader = acceptQueueReader({ address: '127.0.0.1', family: 'IPv4', port: 1 })
    assert.ok(reader !== undefined)
    try {
      assert.equal(reader.read(), undefined)
    } finally {
      reader.close()
    }
  })
})
