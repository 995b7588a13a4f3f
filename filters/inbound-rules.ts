// Owns the list of every built-in inbound rule, in the order verdicts report them: authentication and header shape
// (./spam-rules.ts), content (./content-rules.ts), then the classic header and text signals (./classic-*.ts).
import { CLASSIC_HEADER_RULES } from './classic-headers.js';
import { CLASSIC_TEXT_RULES } from './classic-text.js';
import { CONTENT_RULES, type ContentContext } from './content-rules.js';
import { SPAM_RULES, type SpamRule } from './spam-rules.js';

export const INBOUND_RULES: readonly SpamRule<ContentContext>[] = [...SPAM_RULES, ...CONTENT_RULES, ...CLASSIC_HEADER_RULES, ...CLASSIC_TEXT_RULES];
