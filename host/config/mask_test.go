package config_test

import (
	"testing"

	"github.com/antler-mcp/antler/host/config"
)

func TestIsSensitiveKey(t *testing.T) {
	for key, want := range map[string]bool{
		"apiKey": true, "api_key": true, "API-KEY": true, "clientSecret": true, "accessKey": true,
		"privateKey": true, "token": true, "authToken": true, "refresh-token": true, "password": true,
		"passwd": true, "credentials": true, "Authorization": true, "bearer": true, "x_secret_value": true,
		"secretive": false, "tokenizer": false, "description": false, "keywords": false, "url": false,
		"monkey": false, "author": false, "": false,
	} {
		if got := config.IsSensitiveKey(key); got != want {
			t.Errorf("IsSensitiveKey(%q) = %v, want %v", key, got, want)
		}
	}
}
