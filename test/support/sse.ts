import http, { type IncomingHttpHeaders } from 'node:http'

export interface SseEvent { id?: string, event: string, data: string }

/** A Server-Sent Events reader over a real socket: what a browser's EventSource does, parsed as it arrives. */
export interface SseStream {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly events: SseEvent[]
  /** Comment lines seen (heartbeats). */
  comments: number
  /** Bytes of a non-stream answer (a problem). */
  body: string
  readonly ended: Promise<void>
  close (): void
}

export async function openStream (url: string, headers: Record<string, string>): Promise<SseStream> {
  return await new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, res => {
      let buffer = ''
      let endedResolve: () => void = () => {}
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events: [],
        comments: 0,
        body: '',
        ended: new Promise<void>(resolve => { endedResolve = resolve }),
        close: () => { req.destroy() },
      }
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        if (stream.status !== 200) {
          stream.body += chunk
          return
        }
        buffer += chunk
        let cut: number
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          const e: Partial<SseEvent> & { data?: string } = {}
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) stream.comments++
            else if (line.startsWith('id: ')) e.id = line.slice(4)
            else if (line.startsWith('event: ')) e.event = line.slice(7)
            else if (line.startsWith('data: ')) e.data = (e.data === undefined ? '' : e.data + '\n') + line.slice(6)
          }
          if (e.data !== undefined) stream.events.push({ event: e.event ?? 'message', data: e.data, ...(e.id !== undefined ? { id: e.id } : {}) })
        }
      })
      res.on('end', () => { endedResolve() })
      res.on('close', () => { endedResolve() })
      resolve(stream)
    })
    req.on('error', reject)
  })
}
