import type { Shell } from './shell.ts'

/** A media made from an uploaded file (`POST /media`, the file as the form's part `file`). */
export async function upload (shell: Shell, file: File): Promise<{ id: string, alt: string }> {
  const form = new FormData()
  form.append('file', file, file.name)
  const { body } = await shell.api.call<{ id: string, alt?: string | null }>('POST', '/media', { body: form })
  return { id: body.id, alt: body.alt ?? '' }
}

/** Where a media's image is shown at a width (the service makes and keeps each variant). */
export function mediaImage (id: string, width: number): string {
  return `/media/${encodeURIComponent(id)}/image?w=${width}`
}

/** What a browser's user agent says it is, in a person's words: `Chrome on Linux`. */
export function deviceOf (userAgent: string): string {
  const browser = /Edg\//.test(userAgent)
    ? 'Edge'
    : /Firefox\//.test(userAgent) ? 'Firefox' : /Chrome\//.test(userAgent) ? 'Chrome' : /Safari\//.test(userAgent) ? 'Safari' : null
  const os = /iPhone|iPad/.test(userAgent)
    ? 'iOS'
    : /Android/.test(userAgent) ? 'Android' : /Windows/.test(userAgent) ? 'Windows' : /Mac OS X|Macintosh/.test(userAgent) ? 'macOS' : /Linux/.test(userAgent) ? 'Linux' : null
  if (browser === null) return userAgent === '' ? 'An unknown device' : userAgent.slice(0, 40)
  return os === null ? browser : `${browser} on ${os}`
}
