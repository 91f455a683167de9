// Tests never inherit a developer's live settings by accident: quiet logs unless asked for.
process.env.LOG_LEVEL ??= 'silent';
