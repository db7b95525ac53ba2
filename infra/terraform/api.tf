# One HTTP API for executors (xxl-job /api/* under both prefixes) and people (console, /v1 admin API).
# Executors' heartbeats and results have their own routes and functions (registry, callback);
# every other request, / included, takes the $default route to the web function.

resource "aws_apigatewayv2_api" "http" {
  name          = var.name
  protocol_type = "HTTP"
  description   = "xjob admin address (executors and the /v1 admin API)"
}

# Route throttling: the human-facing $default route (console sign-ins, /v1) gets its own, lower
# rate, so a flood there is refused at the edge before it costs a web invocation; executors'
# heartbeats and results keep the stage's rate.
resource "aws_apigatewayv2_stage" "default" {
  api_id      = aws_apigatewayv2_api.http.id
  name        = "$default"
  auto_deploy = true
  default_route_settings {
    throttling_rate_limit  = var.api_rate_limit
    throttling_burst_limit = var.api_rate_limit
  }
  route_settings {
    route_key              = aws_apigatewayv2_route.web.route_key
    throttling_rate_limit  = var.web_rate_limit
    throttling_burst_limit = var.web_rate_limit
  }
}

resource "aws_apigatewayv2_integration" "callback" {
  api_id                 = aws_apigatewayv2_api.http.id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_function.callback.invoke_arn
  payload_format_version = "2.0"
}

resource "aws_apigatewayv2_integration" "registry" {
  api_id                 = aws_apigatewayv2_api.http.id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_function.registry.invoke_arn
  payload_format_version = "2.0"
}

resource "aws_apigatewayv2_route" "callback" {
  api_id    = aws_apigatewayv2_api.http.id
  route_key = "POST /api/callback"
  target    = "integrations/${aws_apigatewayv2_integration.callback.id}"
}

resource "aws_apigatewayv2_route" "callback_prefixed" {
  api_id    = aws_apigatewayv2_api.http.id
  route_key = "POST /xxl-job-admin/api/callback"
  target    = "integrations/${aws_apigatewayv2_integration.callback.id}"
}

resource "aws_apigatewayv2_route" "registry" {
  api_id    = aws_apigatewayv2_api.http.id
  route_key = "POST /api/registry"
  target    = "integrations/${aws_apigatewayv2_integration.registry.id}"
}

resource "aws_apigatewayv2_route" "registry_remove" {
  api_id    = aws_apigatewayv2_api.http.id
  route_key = "POST /api/registryRemove"
  target    = "integrations/${aws_apigatewayv2_integration.registry.id}"
}

resource "aws_apigatewayv2_route" "registry_prefixed" {
  api_id    = aws_apigatewayv2_api.http.id
  route_key = "POST /xxl-job-admin/api/registry"
  target    = "integrations/${aws_apigatewayv2_integration.registry.id}"
}

resource "aws_apigatewayv2_route" "registry_remove_prefixed" {
  api_id    = aws_apigatewayv2_api.http.id
  route_key = "POST /xxl-job-admin/api/registryRemove"
  target    = "integrations/${aws_apigatewayv2_integration.registry.id}"
}

resource "aws_apigatewayv2_integration" "web" {
  api_id                 = aws_apigatewayv2_api.http.id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_function.web.invoke_arn
  payload_format_version = "2.0"
}

resource "aws_apigatewayv2_route" "web" {
  api_id    = aws_apigatewayv2_api.http.id
  route_key = "$default"
  target    = "integrations/${aws_apigatewayv2_integration.web.id}"
}

resource "aws_lambda_permission" "callback_api" {
  statement_id  = "AllowHttpApi"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.callback.function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http.execution_arn}/*/*"
}

resource "aws_lambda_permission" "registry_api" {
  statement_id  = "AllowHttpApi"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.registry.function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http.execution_arn}/*/*"
}

resource "aws_lambda_permission" "web_api" {
  statement_id  = "AllowHttpApi"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.web.function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http.execution_arn}/*/*"
}
