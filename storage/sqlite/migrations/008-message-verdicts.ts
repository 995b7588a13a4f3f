// Owns the SQL of migration 8 (user_version 8): the inbound verdicts kept with a relayed message.
// 8: the inbound filtering verdicts (JSON array of step records) of a relayed message, kept with it (issue 5:
// "each step a verdict record … stored with the message"); NULL for outbound mail and DSNs.
export const MESSAGE_VERDICTS = `
  ALTER TABLE messages ADD COLUMN verdicts TEXT;
  `;
