# The HTTP API for people and tools (console, /v1 admin API, /metrics): every request, / included,
# takes the $default route to the web function. Executors call the callback function's URL
# (lambda.tf), which costs no API Gateway request per result.

resource "aws_apigatewayv2_api" "http" {
  name          = var.name
  protocol_type = "HTTP"
  description   = "xjob admin API and console"
}

# Route throttling: the human-facing $default route (console sign-ins, /v1) gets its own, lower
# rate, so a flood there is refused at the edge before it costs a web invocation.
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

resource "aws_lambda_permission" "web_api" {
  statement_id  = "AllowHttpApi"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.web.function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http.execution_arn}/*/*"
}
