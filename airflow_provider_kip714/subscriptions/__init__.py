"""CLIENT_METRICS subscriptions: the model and its validation, window names, the admin client."""
