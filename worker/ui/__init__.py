"""The fleet page: the matrix, a model's page, a consumer's page and a fleet-change
preview, rendered on the server from the model index (`routes.ui_routes`)."""
