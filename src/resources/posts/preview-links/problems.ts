import type { ProblemDeclaration } from '../../../catalogue.ts'

declare module '../../../errors.ts' { interface ResourceProblems { PREVIEW_NOT_FOUND: true } }

/** Preview links' problem code: a token that leads to no post. */
export const previewLinksProblems = {
  PREVIEW_NOT_FOUND: {
    status: 404,
    title: 'Preview not found',
    detail: 'This preview link does not exist, has expired or was revoked, or its post was deleted.',
    translations: {
      de: { title: 'Vorschau nicht gefunden', detail: 'Diesen Vorschaulink gibt es nicht, er ist abgelaufen oder wurde widerrufen, oder sein Beitrag wurde gelöscht.' },
      fr: { title: 'Aperçu introuvable', detail: 'Ce lien d’aperçu n’existe pas, a expiré ou a été révoqué, ou son article a été supprimé.' },
      es: { title: 'Vista previa no encontrada', detail: 'Este enlace de vista previa no existe, caducó o fue revocado, o su entrada fue eliminada.' },
    },
  },
} satisfies Readonly<Record<string, ProblemDeclaration>>
