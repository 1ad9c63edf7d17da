import type { Interop } from '../../../http/contract/resources.ts'
import { ghostReader } from './ghost-reader.ts'
import { postImages } from './images.ts'
import { writeImported } from './importable.ts'
import { inlineMapper, threadMapper } from './post-mapper.ts'
import { SNIFF_BYTES, sniff } from './sniff.ts'
import { wxrReader } from './wxr-reader.ts'
import { wxrWriter } from './wxr.ts'

/**
 * Posts' face towards other blog engines' files: WordPress's WXR written from posts (the export's
 * `wxr` format), and WordPress's (WXR) and Ghost's export files read into posts by the rules of
 * posts (an import). The jobs that run them are the exports' and the imports'; what a post is
 * in such a file stays here.
 */
export const postsInterop: Interop = {
  writers: { wxr: wxrWriter },
  readers: { wordpress: wxrReader, ghost: ghostReader },
  sniffBytes: SNIFF_BYTES,
  sniff,
  mapper: ({ thread }) => thread ? threadMapper() : inlineMapper,
  images: postImages,
  write: writeImported,
}
